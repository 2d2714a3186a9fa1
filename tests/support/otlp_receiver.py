"""A small OTLP/HTTP trace receiver: what a real exporter sends, decoded with opentelemetry-proto.

It answers `POST /v1/traces` (protobuf, optionally gzip) with an empty export response and
keeps every span it received, as the collector's wire format carries them.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span


class OtlpReceiver:
    """Spans received so far, with the `service.name` of the resource that sent each."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._spans: list[tuple[str, Span]] = []

    def add(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            for resource_spans in request.resource_spans:
                service = next((a.value.string_value for a in resource_spans.resource.attributes
                                if a.key == "service.name"), "")
                for scope_spans in resource_spans.scope_spans:
                    self._spans.extend((service, span) for span in scope_spans.spans)

    def spans(self) -> list[tuple[str, Span]]:
        with self._lock:
            return list(self._spans)

    def wait_for(self, found: Callable[[list[tuple[str, Span]]], bool],
                 timeout_s: float = 15.0) -> list[tuple[str, Span]]:
        deadline = time.monotonic() + timeout_s
        while not found(spans := self.spans()):
            assert time.monotonic() < deadline, [span.name for _, span in spans]
            time.sleep(0.05)
        return spans


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A receiver on a free loopback port; its traces endpoint is `url`."""
    receiver: OtlpReceiver

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            receiver.add(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = OtlpReceiver(f"http://127.0.0.1:{server.server_address[1]}/v1/traces")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
