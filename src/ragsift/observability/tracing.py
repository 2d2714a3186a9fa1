"""Client spans of model-server calls, without importing OpenTelemetry unless tracing is on.

The adapters wrap each HTTP call to the embedder, reranker, rewriter or chat model in
`client_span(service, request)`. While a traced request or search runs, the tracer it made
current (observability/otel_http.py) records a CLIENT span and writes the W3C `traceparent`,
`tracestate` and `baggage` headers into the request; otherwise (tracing off, the default) the
call costs one context-variable read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Protocol

import httpx

Answered = Callable[[int], None]
"""Told the HTTP status of the answer (a span records it)."""


class HttpTracer(Protocol):
    def client_span(self, service: str, request: httpx.Request
                    ) -> AbstractContextManager[Answered]: ...


_active: ContextVar[HttpTracer | None] = ContextVar("ragsift_http_tracer", default=None)


def _ignore(_status: int) -> None:
    return None


def client_span(service: str, request: httpx.Request) -> AbstractContextManager[Answered]:
    """A CLIENT span around sending `request` (its headers get the trace context), or
    nothing when no traced request or search is running."""
    tracer = _active.get()
    if tracer is None:
        return nullcontext(_ignore)
    return tracer.client_span(service, request)


@contextmanager
def tracing_with(tracer: HttpTracer) -> Iterator[None]:
    """`tracer` records the client spans of the calls made meanwhile (and in the threads and
    tasks started meanwhile, which copy the context)."""
    token = _active.set(tracer)
    try:
        yield
    finally:
        _active.reset(token)

