"""Client spans of model-server calls, without importing OpenTelemetry unless tracing is on.

The adapters wrap each HTTP call to the embedder, reranker, rewriter or chat model in
`client_span(service, request)`. While a traced request or search runs, the tracer it made
current (observability/otel_http.py) records a CLIENT span and writes the W3C `traceparent`,
`tracestate` and `baggage` headers into the request; otherwise (tracing off, the default) the
call costs one context-variable read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, Protocol

import httpx

Answered = Callable[[int], None]
"""Told the HTTP status of the answer (a span records it)."""


class HttpTracer(Protocol):
    def client_span(self, service: str, request: httpx.Request
                    ) -> AbstractContextManager[Answered]: ...


# where the server span's middleware leaves, in the ASGI scope, how to resume its trace
SCOPE_KEY = "ragsift.trace"

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


def resumed(scope: Mapping[str, Any]) -> AbstractContextManager[object]:
    """The trace of the HTTP request whose ASGI scope this is, current again: for work done
    for it in another task (an MCP session runs its tools in the session's task, which the
    session's first request started). Nothing when tracing is off."""
    resume = scope.get(SCOPE_KEY)
    return resume() if callable(resume) else nullcontext()
