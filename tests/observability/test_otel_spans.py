"""Each retrieval becomes an OpenTelemetry span with a child per stage (in-memory exporter)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.observability.otel import RetrievalSpans

TEXT = b"# Travel\n\nThe hotel limit per night is 150 dollars; in Tokyo 220 dollars.\n"


def test_a_search_is_a_span_with_its_stages_timings_and_degradations(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    container = build(Settings(data_dir=tmp_path / "data", chunk_tokens=32,
                               chunk_overlap_tokens=0))
    try:
        kb = container.ingestion.ensure_kb("docs")
        container.ingestion.ingest_bytes(kb, "travel.md", TEXT)
        # the observer the container would build from RAGSIFT_OTEL_EXPORTER, on our provider
        object.__setattr__(container.retrieval, "_observer", RetrievalSpans(provider))
        request = SearchRequest(query="hotel limit per night", kb_id=kb.id,
                                document_ids=("not-a-document",))
        result = asyncio.run(container.retrieval.search(request))
    finally:
        container.close()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    root = spans["ragsift.search"]
    attributes = dict(root.attributes or {})
    assert attributes["ragsift.request_id"] == result.trace.request_id
    assert attributes["ragsift.kb_id"] == kb.id
    assert attributes["ragsift.mode"] == "hybrid"
    assert attributes["ragsift.returned_count"] == result.trace.returned_count == 0
    assert root.end_time is not None and root.start_time is not None
    stages = {name.removeprefix("ragsift.stage."): span for name, span in spans.items()
              if name.startswith("ragsift.stage.")}
    assert set(stages) == set(result.trace.timings_ms)
    for name, span in stages.items():
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        assert span.end_time is not None and span.start_time is not None
        elapsed_ms = (span.end_time - span.start_time) / 1e6
        assert abs(elapsed_ms - result.trace.timings_ms[name]) < 0.01
    assert dataclasses.is_dataclass(result) or result.trace.scope.empty_reason


def test_a_failing_observer_never_fails_the_search(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data"))
    try:
        kb = container.ingestion.ensure_kb("docs")
        container.ingestion.ingest_bytes(kb, "travel.md", TEXT)

        def broken(*_: object) -> None:
            raise RuntimeError("exporter down")

        object.__setattr__(container.retrieval, "_observer", broken)
        result = asyncio.run(container.retrieval.search(
            SearchRequest(query="hotel limit", kb_id=kb.id)))
        assert result.hits
    finally:
        container.close()


def test_the_console_exporter_is_built_from_the_settings(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data", otel_exporter="console"))
    try:
        assert isinstance(container.retrieval._observer, RetrievalSpans)
    finally:
        container.close()
