"""Pipeline-level costs for search_latency.py: full ingest without embedding, service latency."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.pipeline import IngestionService
from ragsift.retrieval.service import RetrievalService

DIMENSION = 384


class RandomVectorEmbedder:
    """Real e5 token counts (chunking needs them), random unit vectors instead of the model."""

    model_id = "bench/random"
    dimension = DIMENSION

    def __init__(self, vectors: dict[str, NDArray[np.float32]] | None = None) -> None:
        self._tokens = E5Tokenizer()
        self._rng = np.random.default_rng(0)
        self._queries = vectors or {}

    def count_tokens(self, text: str) -> int:
        return self._tokens.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = self._rng.standard_normal((len(texts), DIMENSION)).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self._queries[text]


def markdown_document(paragraphs: Sequence[str], number: int) -> str:
    """A handbook-like markdown file: one heading per three paragraphs."""
    parts = [f"# Document {number}"]
    for i, paragraph in enumerate(paragraphs):
        if i % 3 == 0:
            parts.append(f"## Section {i // 3 + 1}")
        parts.append(paragraph)
    return "\n\n".join(parts) + "\n"


def pipeline_ingest_rate(documents: Sequence[str], workers: int = 1) -> tuple[int, float]:
    """(children, seconds) for parse + chunk + BM25 + dense store + facts, embedding excluded.

    `workers` > 1 prepares documents (parse, chunk, BM25 analysis) in that many processes;
    their start-up is inside the measured time, as it is in a real `ragsift ingest`.
    """
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repository = SqlRepository(f"sqlite:///{root / 'facts.sqlite'}")
        index = EmbeddedIndex(root / "index", DIMENSION)
        embedder = RandomVectorEmbedder()
        service = IngestionService(
            repository, index, embedder, LocalObjectStore(root / "objects"),
            # the bare tokenizer pickles into the worker processes (as bootstrap wires it)
            Chunker(E5Tokenizer()), max_file_bytes=10**8, batch_size=256, workers=workers,
        )
        kb = service.ensure_kb("bench")
        embedder.count_tokens("load the tokenizer before the clock starts")
        start = time.perf_counter()
        accepted = [
            service.accept(kb, f"doc-{number}.md", text.encode("utf-8"))
            for number, text in enumerate(documents)
        ]
        outcomes = service.process_many([outcome.document.id for outcome in accepted])
        children = sum(outcome.chunks for outcome in outcomes)
        seconds = time.perf_counter() - start
        index.close()
        repository.close()
    return children, seconds


def load_facts(repository: SqlRepository, records: Sequence[IndexRecord], kbs: int) -> None:
    """READY documents and their chunks for records already in the index."""
    for k in range(kbs):
        # the model id of the embedder the service searches with (search checks they match)
        repository.create_kb(KnowledgeBase(id=f"kb-{k}", name=f"kb-{k}",
                                           embedding_model=RandomVectorEmbedder.model_id,
                                           embedding_dim=DIMENSION))
    by_doc: dict[str, list[IndexRecord]] = {}
    for record in records:
        by_doc.setdefault(record.document_id, []).append(record)
    for doc_id, rows in by_doc.items():
        repository.add_document(Document(
            id=doc_id, kb_id=rows[0].kb_id, filename=f"{doc_id}.md", media_type="text/markdown",
            sha256=doc_id, size=1, status=DocumentStatus.READY))
        repository.replace_chunks(doc_id, [
            Chunk(id=r.chunk_id, document_id=doc_id, kb_id=r.kb_id, parent_id=None, level=1,
                  ordinal=i, text=r.text, token_count=len(r.text))
            for i, r in enumerate(rows)
        ])


def service_latencies(
    index: EmbeddedIndex, repository: SqlRepository,
    cases: Sequence[tuple[str, NDArray[np.float32], SearchFilter]], retrieval_only: bool = False,
) -> list[float]:
    """Milliseconds per RetrievalService.search (hybrid, top-30), query embedding excluded.

    `retrieval_only` turns off the stages after top_k (Small2Big context, the FAQ plan).
    """
    embedder = RandomVectorEmbedder({text: vec for text, vec, _ in cases})
    settings = Settings(data_dir=Path("unused"), top_k=30, candidate_k=30, channel_k=30,
                        small2big=not retrieval_only, run_faq=not retrieval_only)
    service = RetrievalService(repository, index, embedder, settings)
    loop = asyncio.new_event_loop()
    samples: list[float] = []
    try:
        for text, _, flt in cases:
            request = SearchRequest(
                query=text, kb_id=flt.kb_id,
                document_ids=tuple(sorted(flt.document_ids)) if flt.document_ids else None,
                sources=tuple(sorted(flt.sources)) if flt.sources else None,
                visibilities=tuple(sorted(flt.visibilities)) if flt.visibilities else None,
            )
            start = time.perf_counter()
            loop.run_until_complete(service.search(request))
            samples.append((time.perf_counter() - start) * 1000)
    finally:
        loop.close()
    return samples


def p50_p95(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples), float(np.quantile(np.asarray(samples), 0.95))
