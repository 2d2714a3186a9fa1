"""The post-fusion stage slot of RetrievalService (re-scorers between auto-merge and rerank)
and the KB version read with the KB, over a real SQLite repository and a scripted index."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.domain.stages import RerankScore
from ragsift.domain.trace import StageTrace
from ragsift.retrieval.candidates import Candidate, CandidateOutcome, StageContext
from ragsift.retrieval.service import RetrievalService
from retrieval.test_retrieval_service import ScriptedIndex, UnitEmbedder


class Reverse:
    """A re-scorer that reverses the candidates and remembers what it was given."""

    name = "reverse"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def run(
        self, query: str, candidates: Sequence[Candidate], context: StageContext
    ) -> CandidateOutcome:
        self.seen.append([c.chunk.id for c in candidates])
        reversed_ = tuple(replace(c) for c in reversed(candidates))
        return CandidateOutcome(reversed_, StageTrace(status="applied"))


class InOrderReranker:
    """Scores the passages in the order it gets them (first = best), recording that order."""

    model_id = "in-order"

    def __init__(self) -> None:
        self.passages: list[str] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        self.passages = list(passages)
        return [RerankScore(index=i, score=float(len(passages) - i)) for i in range(len(passages))]


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[SqlRepository]:
    repo = SqlRepository(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    repo.create_kb(KnowledgeBase(id="kb1", name="hr", embedding_model="unit", embedding_dim=2))
    for doc_id in ("d1", "d2", "d3"):
        repo.add_document(Document(id=doc_id, kb_id="kb1", filename=f"{doc_id}.md",
                                   media_type="text/markdown", sha256=doc_id, size=1,
                                   status=DocumentStatus.READY))
        repo.replace_chunks(doc_id, [Chunk(id=f"c{doc_id[1]}", document_id=doc_id, kb_id="kb1",
                                           parent_id=None, level=1, ordinal=0,
                                           text=f"text of {doc_id}", token_count=3)])
    yield repo
    repo.close()


def search(service: RetrievalService, **fields: object) -> RetrievalResult:
    request = SearchRequest.model_validate({"query": "annual leave", "kb_id": "kb1", **fields})
    return asyncio.run(service.search(request))


def test_a_rescorer_runs_after_fusion_and_before_rerank_and_its_order_reaches_the_hits(
    repository: SqlRepository,
) -> None:
    rescorer, reranker = Reverse(), InOrderReranker()
    service = RetrievalService(
        repository, ScriptedIndex(), UnitEmbedder(), Settings(data_dir=Path("unused")),
        reranker=reranker, rescorers=[rescorer],
    )
    plain = search(service, fusion="rrf", rerank=False)
    assert rescorer.seen[-1] == ["c1", "c2", "c3"]  # the fused, READY-checked candidates
    assert [hit.chunk_id for hit in plain.hits] == ["c3", "c2", "c1"]
    assert plain.trace.rerank.status == "off"
    reranked = search(service, fusion="rrf", rerank=True)
    # the reranker got the re-scorer's order, and kept it (it scores the first best)
    assert reranker.passages == ["text of d3", "text of d2", "text of d1"]
    assert [hit.chunk_id for hit in reranked.hits] == ["c3", "c2", "c1"]
    assert reranked.trace.rerank.status == "applied"
    assert "reverse" in reranked.trace.timings_ms
    assert list(reranked.trace.timings_ms).index("reverse") < list(
        reranked.trace.timings_ms).index("rerank")


def test_without_rescorers_the_fused_order_is_reranked_as_before(
    repository: SqlRepository,
) -> None:
    reranker = InOrderReranker()
    service = RetrievalService(repository, ScriptedIndex(), UnitEmbedder(),
                               Settings(data_dir=Path("unused")), reranker=reranker)
    result = search(service, fusion="rrf", rerank=True)
    assert reranker.passages == ["text of d1", "text of d2", "text of d3"]
    assert "reverse" not in result.trace.timings_ms


@pytest.mark.parametrize("name", ["rerank", "auto_merge", "total", "fusion", "small2big"])
def test_a_post_fusion_stage_may_not_take_a_name_the_service_records(
    repository: SqlRepository, name: str,
) -> None:
    clash = Reverse()
    clash.name = name
    with pytest.raises(ValueError, match=name):
        RetrievalService(repository, ScriptedIndex(), UnitEmbedder(),
                         Settings(data_dir=Path("unused")), rescorers=[clash])


def test_an_unretained_pinned_version_is_not_found(repository: SqlRepository) -> None:
    service = RetrievalService(repository, ScriptedIndex(), UnitEmbedder(),
                               Settings(data_dir=Path("unused")), versions=repository)
    with pytest.raises(NotFound, match="version 99"):
        search(service, kb_version=99)


def test_a_bad_query_is_reported_before_an_unretained_pinned_version(
    repository: SqlRepository,
) -> None:
    # the version is read with the KB, before the plan's checks; its error must wait for them
    service = RetrievalService(repository, ScriptedIndex(), UnitEmbedder(),
                               Settings(data_dir=Path("unused"), max_query_chars=5),
                               versions=repository)
    with pytest.raises(InvalidInput, match="the limit is 5"):
        search(service, kb_version=99)
