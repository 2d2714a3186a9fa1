"""RetrievalService over a real SQLite repository and a scripted in-memory index."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput, NotFound, RetrievalUnavailable
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import ChannelHit, RetrievalResult
from ragsift.ports import Vectors
from ragsift.retrieval.service import RetrievalService


class ScriptedIndex:
    """Returns fixed lists; a channel can be told to raise or to block."""

    def __init__(self) -> None:
        self.dense = [("c1", "d1", 0.9), ("c3", "d3", 0.8), ("c2", "d2", 0.7)]
        self.sparse = [("c2", "d2", 7.0), ("c1", "d1", 5.0)]
        self.fail: set[str] = set()
        self.block = threading.Event()
        self.blocking: set[str] = set()
        self.filters: list[SearchFilter] = []

    def _hits(self, channel: str, rows: list[tuple[str, str, float]], f: SearchFilter,
              limit: int) -> list[ChannelHit]:
        self.filters.append(f)
        if channel in self.blocking:
            self.block.wait(5)
        if channel in self.fail:
            raise RuntimeError(f"{channel} index is down")
        allowed = f.document_ids
        return [ChannelHit(chunk_id=c, document_id=d, score=s) for c, d, s in rows
                if allowed is None or d in allowed][:limit]

    def search_dense(self, vector: Vectors, f: SearchFilter, limit: int) -> list[ChannelHit]:
        return self._hits("dense", self.dense, f, limit)

    def search_sparse(self, query: str, f: SearchFilter, limit: int) -> list[ChannelHit]:
        return self._hits("sparse", self.sparse, f, limit)

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None: ...
    def delete_chunks(self, chunk_ids: Iterable[str]) -> None: ...
    def delete_document(self, document_id: str) -> None: ...
    def count(self) -> int:
        return 3
    def close(self) -> None: ...


class UnitEmbedder:
    model_id = "unit"
    dimension = 2

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.ones((len(texts), 2), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return np.ones(2, dtype=np.float32)


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[SqlRepository]:
    repo = SqlRepository(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    repo.create_kb(KnowledgeBase(id="kb1", name="hr", embedding_model="unit", embedding_dim=2))
    for doc_id, status in (("d1", "READY"), ("d2", "READY"), ("d3", "INDEXING")):
        repo.add_document(Document(id=doc_id, kb_id="kb1", filename=f"{doc_id}.md",
                                   media_type="text/markdown", sha256=doc_id, size=1,
                                   status=DocumentStatus(status)))
        repo.replace_chunks(doc_id, [Chunk(id=f"c{doc_id[1]}", document_id=doc_id, kb_id="kb1",
                                           parent_id=None, level=1, ordinal=0,
                                           heading_path=("Leave",), text=f"text of {doc_id}",
                                           token_count=3)])
    yield repo
    repo.close()


@pytest.fixture
def index() -> ScriptedIndex:
    return ScriptedIndex()


@pytest.fixture
def service(repository: SqlRepository, index: ScriptedIndex) -> RetrievalService:
    return RetrievalService(repository, index, UnitEmbedder(), Settings(data_dir=Path("unused")))


def run(service: RetrievalService, **fields: object) -> RetrievalResult:
    request = SearchRequest.model_validate({"query": "annual leave", "kb_id": "kb1", **fields})
    return asyncio.run(service.search(request))


def test_hybrid_fuses_both_channels_and_drops_documents_that_are_not_ready(
    service: RetrievalService,
) -> None:
    result = run(service, fusion="rrf", sparse_weight=1.0)
    assert [h.chunk_id for h in result.hits] == ["c1", "c2"]
    first = result.hits[0]
    assert first.fusion_score == pytest.approx(1 / 61 + 1 / 62)
    assert (first.dense_rank, first.sparse_rank) == (1, 2)
    assert (first.dense_score, first.sparse_score) == (0.9, 5.0)
    assert first.retrieval_sources == ("dense:original", "sparse:original")
    assert first.filename == "d1.md" and first.text == "text of d1"
    trace = result.trace
    assert trace.fused_count == 3 and trace.ready_filtered_count == 1
    assert [c.list_name for c in trace.channels] == ["dense:original", "sparse:original"]
    assert trace.degradations == ()
    assert {"scope", "channels", "fusion", "ready_check", "total"} <= set(trace.timings_ms)


def test_dense_mode_keeps_the_raw_cosine_as_fusion_score(service: RetrievalService) -> None:
    result = run(service, mode="dense")
    assert [(h.chunk_id, h.fusion_score) for h in result.hits] == [("c1", 0.9), ("c2", 0.7)]


def test_a_failed_channel_in_hybrid_degrades_to_the_other(
    service: RetrievalService, index: ScriptedIndex
) -> None:
    index.fail = {"sparse"}
    result = run(service)
    assert [h.chunk_id for h in result.hits] == ["c1", "c2"]
    (degradation,) = result.trace.degradations
    assert degradation.code == "sparse_retrieval_failed"
    assert "sparse index is down" in degradation.reason


def test_every_requested_channel_failing_is_an_error_not_an_empty_result(
    service: RetrievalService, index: ScriptedIndex
) -> None:
    index.fail = {"dense", "sparse"}
    with pytest.raises(RetrievalUnavailable, match="dense index is down"):
        run(service)
    index.fail = {"sparse"}
    with pytest.raises(RetrievalUnavailable):
        run(service, mode="sparse")


def test_whitelist_is_intersected_with_ready_documents_and_pushed_to_the_index(
    service: RetrievalService, index: ScriptedIndex
) -> None:
    result = run(service, document_ids=("d2", "d3", "nope"))
    assert [h.chunk_id for h in result.hits] == ["c2"]
    assert index.filters[-1].document_ids == frozenset({"d2"})
    assert result.trace.scope.document_ids_allowed == 1


def test_a_whitelist_with_no_ready_document_returns_nothing_and_says_why(
    service: RetrievalService, index: ScriptedIndex
) -> None:
    result = run(service, document_ids=("d3",))
    assert result.hits == ()
    assert "none of the 1 requested documents is READY" in result.trace.scope.empty_reason
    assert index.filters == []


def test_fifty_one_document_ids_is_a_clear_error(service: RetrievalService) -> None:
    with pytest.raises(InvalidInput, match="at most 50 document ids"):
        run(service, document_ids=tuple(f"d{i}" for i in range(51)))


@pytest.mark.parametrize("query", ["   ", "?!。，…", "x" * 1001])
def test_unusable_queries_are_rejected(service: RetrievalService, query: str) -> None:
    with pytest.raises(InvalidInput):
        run(service, query=query)


def test_unknown_knowledge_base_is_not_found(service: RetrievalService) -> None:
    with pytest.raises(NotFound):
        run(service, kb_id="missing")


def test_top_k_cuts_after_the_ready_check_and_never_pads(service: RetrievalService) -> None:
    assert len(run(service, top_k=1).hits) == 1
    assert len(run(service, top_k=10).hits) == 2


def test_cancelling_a_search_propagates_and_is_not_a_degradation(
    service: RetrievalService, index: ScriptedIndex
) -> None:
    index.blocking = {"dense"}

    async def cancel_midway() -> None:
        task = asyncio.create_task(service.search(SearchRequest(query="leave", kb_id="kb1")))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
        index.block.set()  # let the worker thread finish so the loop can close

    try:
        asyncio.run(cancel_midway())
    finally:
        index.block.set()
