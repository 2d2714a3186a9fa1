"""OpenTelemetry spans of retrievals: one span per search, a child per stage of its trace.

The search's span is current while the search runs (`searching`), so it is a child of the
HTTP request's server span (observability/otel_http.py) and the parent of the client spans of
the model-server calls the search makes. The trace records each stage's duration, not its
start, so each stage span starts with the search and lasts as long as the stage took (stages
of the channels run concurrently anyway); degradations and counts are attributes.
opentelemetry is the optional `otel` extra, imported only when RAGSIFT_OTEL_EXPORTER is set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ragsift.domain.results import RetrievalResult
from ragsift.observability.tracing import tracing_with

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

logger = logging.getLogger(__name__)

SERVICE_NAME = "ragsift"
# the span of the search running in this context (set by `searching`)
_live: ContextVar[Span | None] = ContextVar("ragsift_search_span", default=None)


class RetrievalSpans:
    """Records each retrieval as spans on `provider` (see module docstring)."""

    def __init__(self, provider: TracerProvider) -> None:
        from ragsift.observability.otel_http import OtelHttpTracer

        self.provider = provider
        self._tracer = provider.get_tracer("ragsift.retrieval")
        self._http = OtelHttpTracer(provider)

    @contextmanager
    def searching(self) -> Iterator[None]:
        """The search's span, current meanwhile (a child of the current span, the request's);
        ended by the call that records the result, or here if the search fails."""
        from opentelemetry import trace as otel_trace

        span = self._tracer.start_span("ragsift.search")
        token = _live.set(span)
        try:
            with otel_trace.use_span(span, end_on_exit=False, record_exception=True,
                                     set_status_on_exception=True), tracing_with(self._http):
                yield
        finally:
            _live.reset(token)
            if span.is_recording():  # the search failed, or its result was never recorded
                span.end()

    def __call__(self, result: RetrievalResult, started_ns: int, ended_ns: int) -> None:
        trace = result.trace
        attributes: dict[str, Any] = {
            "ragsift.request_id": trace.request_id, "ragsift.kb_id": trace.kb_id,
            "ragsift.mode": trace.mode, "ragsift.fusion": trace.fusion,
            "ragsift.returned_count": trace.returned_count,
            "ragsift.fused_count": trace.fused_count,
            "ragsift.degradations": [d.code for d in trace.degradations],
            "ragsift.faq_hits": len(result.faq_hits),
        }
        if trace.kb_version is not None:
            attributes["ragsift.kb_version"] = trace.kb_version
        span = _live.get()
        if span is None:  # told of a search that ran outside `searching`
            span = self._tracer.start_span("ragsift.search", start_time=started_ns)
        span.set_attributes(attributes)
        from opentelemetry import trace as otel_trace

        context = otel_trace.set_span_in_context(span)
        for stage, milliseconds in trace.timings_ms.items():
            child = self._tracer.start_span(
                f"ragsift.stage.{stage}", context=context, start_time=started_ns,
                attributes={"ragsift.stage": stage, "ragsift.duration_ms": milliseconds,
                            **_stage_attributes(result, stage)})
            child.end(end_time=started_ns + int(milliseconds * 1e6))
        for degradation in trace.degradations:
            span.add_event("degradation", {"code": degradation.code,
                                           "reason": degradation.reason})
        span.end(end_time=ended_ns)


def _stage_attributes(result: RetrievalResult, stage: str) -> dict[str, Any]:
    record = getattr(result.trace, stage, None)
    if record is None or not hasattr(record, "status"):
        return {}
    values: dict[str, Any] = {"ragsift.status": record.status,
                              "ragsift.retries": record.retries}
    if record.reason:
        values["ragsift.reason"] = record.reason
    return values


def build_spans(exporter: str, endpoint: str | None) -> RetrievalSpans:
    """Spans exported by "otlp" (HTTP, to `endpoint` or OTEL_EXPORTER_OTLP_ENDPOINT) or
    "console" (stderr), in batches off the request path."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    chosen: SpanExporter
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        chosen = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    else:
        chosen = ConsoleSpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(chosen))
    logger.info("OpenTelemetry spans (HTTP requests, retrievals, model-server calls) go to %s",
                endpoint or exporter)
    return RetrievalSpans(provider)
