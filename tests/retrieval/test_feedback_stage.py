"""FeedbackStage around a scripted index: what it replaces, and how it degrades. The real
index and service are in test_service_levers.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import Chunk
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import ChannelHit, FusedHit, RankedList
from ragsift.retrieval.candidates import Candidate
from ragsift.retrieval.feedback_stage import FeedbackOutcome, FeedbackStage
from ragsift.retrieval.options import resolve_options

TEXTS = {"a": "hotel limit invoice desk", "b": "hotel limit desk"}


class ScriptedIndex:
    """The weighted BM25 surface of the embedded index; `fail` makes the search raise."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.asked: list[tuple[tuple[str, float], ...]] = []

    def sparse_analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]:
        return 1, lambda text: text.lower().split()

    def sparse_term_stats(self, kb_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        return 10, {term: 1 for term in terms}

    def search_sparse_weighted(
        self, terms: Sequence[tuple[str, float]], search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        self.asked.append(tuple(terms))
        if self.fail:
            raise RuntimeError("tantivy index is corrupt")
        return [ChannelHit(chunk_id="c", document_id="dc", score=3.0)]


def hits(*ids: str) -> tuple[ChannelHit, ...]:
    return tuple(ChannelHit(chunk_id=i, document_id="d" + i, score=2.0 - n)
                 for n, i in enumerate(ids))


LISTS = (RankedList(name="dense:original", hits=hits("b", "a")),
         RankedList(name="sparse:original", hits=hits("a", "b")))


async def ready(fused: Sequence[FusedHit]) -> Sequence[Candidate]:
    return [Candidate(hit, Chunk(id=hit.chunk_id, document_id=hit.document_id, kb_id="kb",
                                 parent_id=None, level=1, ordinal=0, text=TEXTS[hit.chunk_id],
                                 token_count=4), "f.txt")
            for hit in fused if hit.chunk_id in TEXTS]


def run(index: ScriptedIndex, first_pass_ms: float = 1.0, feedback: bool | None = None
        ) -> FeedbackOutcome:
    settings = Settings(prf_rm3=True, prf_rm3_docs=2)
    options = resolve_options(SearchRequest(kb_id="kb", query="q", feedback=feedback), settings)
    return asyncio.run(FeedbackStage(index, settings).run(
        "hotel limit", SearchFilter(kb_id="kb"), options, LISTS, first_pass_ms, ready))


def test_the_expanded_query_replaces_only_the_original_bm25_list() -> None:
    index = ScriptedIndex()
    outcome = run(index)
    assert [ranked.name for ranked in outcome.lists] == ["dense:original", "sparse:original"]
    assert outcome.lists[0] == LISTS[0]
    assert [h.chunk_id for h in outcome.lists[1].hits] == ["c"]
    (terms,) = index.asked
    # the query's terms first at weight 1 (more when they are expansion terms too)
    assert [term for term, _ in terms[:2]] == ["hotel", "limit"]
    assert all(weight >= 1.0 for _, weight in terms[:2])
    assert {"invoice", "desk"} <= {term for term, _ in terms}
    assert outcome.trace.status == "applied" and outcome.degradation is None
    assert outcome.trace.detail["feedback_docs"] == 2


def test_a_failing_second_search_keeps_the_first_pass_and_is_a_degradation() -> None:
    outcome = run(ScriptedIndex(fail=True))
    assert outcome.lists == LISTS
    assert outcome.trace.status == "failed"
    assert outcome.degradation is not None and outcome.degradation.code == "feedback_failed"
    assert "tantivy index is corrupt" in outcome.degradation.reason


def test_feedback_is_off_when_not_requested_and_skipped_over_budget() -> None:
    index = ScriptedIndex()
    off = run(index, feedback=False)
    assert off.trace.status == "off" and off.lists == LISTS
    slow = run(index, first_pass_ms=1e6)
    assert slow.trace.status == "skipped" and slow.lists == LISTS
    assert index.asked == []


def test_an_index_without_weighted_bm25_queries_is_skipped() -> None:
    settings = Settings(prf_rm3=True)
    options = resolve_options(SearchRequest(kb_id="kb", query="q"), settings)
    outcome = asyncio.run(FeedbackStage(object(), settings).run(
        "hotel limit", SearchFilter(kb_id="kb"), options, LISTS, 1.0, ready))
    assert outcome.trace.status == "skipped" and "no weighted BM25" in (outcome.trace.reason or "")
