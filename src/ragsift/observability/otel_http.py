"""HTTP server spans that join the caller's trace, and client spans that carry it onward.

`TraceMiddleware` extracts W3C trace context (`traceparent`, `tracestate`) and `baggage` from
every request (REST, chat, Dify, OpenAI, MCP over HTTP), starts a SERVER span under it with the
HTTP semantic-convention attributes, and makes it current: the retrieval's spans become its
children, and the calls to model servers CLIENT spans whose trace context goes out in their
headers. Installed only when RAGSIFT_OTEL_EXPORTER is set (opentelemetry: the `otel` extra).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragsift.observability.tracing import Answered, tracing_with

# W3C only, whatever OTEL_PROPAGATORS says: what the issue and the callers (Jaeger, Tempo,
# Langfuse SDKs) speak
PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
_DEFAULT_PORTS = {"http": 80, "https": 443}


class OtelHttpTracer:
    """Records CLIENT spans of model-server calls (see observability/tracing.py)."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("ragsift.http")

    @property
    def tracer(self) -> trace.Tracer:
        return self._tracer

    @contextmanager
    def client_span(self, service: str, request: httpx.Request) -> Iterator[Answered]:
        url = request.url
        span = self._tracer.start_span(request.method, kind=SpanKind.CLIENT, attributes={
            "http.request.method": request.method,
            # no query string or user info: either may hold a secret
            "url.full": str(url.copy_with(query=None, fragment=None, username=None,
                                          password=None)),
            "server.address": url.host,
            "server.port": url.port or _DEFAULT_PORTS.get(url.scheme, 0),
            "ragsift.upstream": service,
        })
        with trace.use_span(span, end_on_exit=True, record_exception=True,
                            set_status_on_exception=True):
            PROPAGATOR.inject(request.headers)

            def answered(status: int) -> None:
                span.set_attribute("http.response.status_code", status)
                if status >= 400:
                    span.set_status(Status(StatusCode.ERROR))

            yield answered


def _carrier(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name, repeated ones joined with commas."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]},{value}" if name in headers else value
    return headers


def _server_attributes(scope: Scope, headers: dict[str, str]) -> dict[str, Any]:
    scheme = str(scope.get("scheme", "http"))
    attributes: dict[str, Any] = {
        "http.request.method": scope.get("method", ""), "url.path": scope.get("path", ""),
        "url.scheme": scheme,
        "network.protocol.version": scope.get("http_version", "1.1"),
    }
    host = headers.get("host")
    if host:
        name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not name or not port.isdigit():
            name, port = host, str(_DEFAULT_PORTS.get(scheme, 0))
        attributes["server.address"] = name.strip("[]")
        attributes["server.port"] = int(port)
    client = scope.get("client")
    if client:
        attributes["client.address"] = client[0]
    if "user-agent" in headers:
        attributes["user_agent.original"] = headers["user-agent"]
    return attributes


class TraceMiddleware:
    """One SERVER span per HTTP request, a child of the caller's `traceparent` when sent."""

    def __init__(self, app: ASGIApp, provider: TracerProvider) -> None:
        self.app = app
        self._http = OtelHttpTracer(provider)
        self._tracer = provider.get_tracer("ragsift.server")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _carrier(scope)
        parent = PROPAGATOR.extract(headers)  # the caller's span and baggage, if any
        method = str(scope.get("method", "HTTP"))
        span = self._tracer.start_span(method, context=parent, kind=SpanKind.SERVER,
                                       attributes=_server_attributes(scope, headers))
        status = 500

        async def traced_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        token = otel_context.attach(trace.set_span_in_context(span, parent))
        try:
            with tracing_with(self._http):
                await self.app(scope, receive, traced_send)
        except Exception as exc:
            span.record_exception(exc)
            raise
        finally:
            otel_context.detach(token)
            # the router left the matched route's template in the scope
            route = getattr(scope.get("route"), "path", None)
            if route:
                span.set_attribute("http.route", route)
                span.update_name(f"{method} {route}")
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))
            span.end()
