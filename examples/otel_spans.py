"""Print the OpenTelemetry spans of one search (console exporter) over a small throwaway KB.

    pip install -e '.[otel]'
    python examples/otel_spans.py
For a collector: RAGSIFT_OTEL_EXPORTER=otlp OTEL_EXPORTER_OTLP_ENDPOINT=http://host:4318/v1/traces.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        container = build(Settings(data_dir=Path(folder), otel_exporter="console"))
        try:
            kb = container.ingestion.ensure_kb("demo")
            container.ingestion.ingest_bytes(
                kb, "travel.md", b"# Travel\n\nThe hotel limit per night is 150 dollars.\n")
            result = asyncio.run(container.retrieval.search(
                SearchRequest(query="hotel limit per night", kb_id=kb.id)))
            print(f"{len(result.hits)} hit(s); request id {result.trace.request_id}")
        finally:
            container.close()  # flushes the batched spans to stdout


if __name__ == "__main__":
    main()
