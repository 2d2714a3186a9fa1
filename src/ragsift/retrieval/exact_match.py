"""The exact-match lane (issue 34): a chunk that holds a rare query term stays on top.

A query term the KB's BM25 index holds in at most `max_df` chunks (an error code, a SKU, a
ticket or contract number, a version, a name) is evidence no fusion method should overrule:
the dense channel sees E-1042 and E-1024 alike, and RRF gives BM25's only hit 0.7/61 whatever
its score. After fusion, the candidates holding such a term move to the top, those holding
more rare terms first, each group in fused order; the rest keep their order.

Rare terms are the KB analyzer's tokens of the query with a document frequency from 1 to
`max_df` that look specific: a token with a digit (a code, a number, a version), and with
`words` on, a Latin-script word of at least 4 letters too. Words are off by default: on
scifact's claims (English prose) rare words are ordinary domain words (clpc, gluten-free,
triacylglycerol) whose holders are often not the answer, and the word rule cost nDCG@10
-0.024 [-0.051, -0.001] in a BM25 proxy, while the digit rule was +0.006 [0, +0.015]
(research/exact_match_scifact_proxy.py, docs/quality.md). Chinese words are left to fusion:
on afqmc-faq the rare ones were everyday words
(公积金, 保证金, 看不到); counting them cost nDCG@10 there and significantly on cmrc2018
(docs/quality.md); a Chinese name's own short BM25 list is kept high by fusion.py's
padding. The chunks holding a term come from a BM25 term search in the request's scope, so
the lane never shows a chunk the caller could not find. An index without term statistics
(Milvus) skips the lane, and the trace says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import FusedHit
from ragsift.domain.trace import Degradation, StageTrace
from ragsift.retrieval.feedback_stage import WeightedSparseIndex

logger = logging.getLogger(__name__)

_MIN_WORD = 4  # letters of a rare Latin-script word without digits


def specific(term: str, words: bool = False) -> bool:
    """Whether a rare `term` is specific enough to outrank fusion (see the module doc)."""
    if any("0" <= c <= "9" for c in term):
        return True
    return words and sum("a" <= c.lower() <= "z" for c in term) >= _MIN_WORD


def rare_terms(tokens: Sequence[str], doc_freq: Mapping[str, int], max_df: int,
               words: bool = False) -> list[str]:
    """The distinct specific `tokens` with a document frequency from 1 to `max_df`."""
    return [t for t in dict.fromkeys(tokens)
            if 1 <= doc_freq.get(t, 0) <= max_df and specific(t, words)]


def effective_max_df(max_df: int, chunks: int) -> int:
    """`max_df`, but at most 1% of the KB's chunks and at least 1: in a KB of 20 chunks a
    word 3 of them hold is common, while a term one chunk holds is rare in any KB."""
    return min(max_df, max(1, chunks // 100))


def promote(fused: Sequence[FusedHit], held: Mapping[str, int]) -> list[FusedHit]:
    """`fused` with the chunks of `held` (chunk id -> rare terms it holds) first: more terms
    first, then fused order; the others after them in fused order. Stable and pure."""
    order = {hit.chunk_id: position for position, hit in enumerate(fused)}
    return sorted(fused, key=lambda hit: (-held.get(hit.chunk_id, 0), order[hit.chunk_id]))


@dataclass(frozen=True, slots=True)
class ExactMatchOutcome:
    fused: list[FusedHit]
    trace: StageTrace
    degradation: Degradation | None = None


@dataclass(frozen=True, slots=True)
class Lookup:
    """Rare terms and their holders (chunk id -> terms held), or the trace of why none."""

    terms: tuple[str, ...] = ()
    held: Mapping[str, int] = field(default_factory=dict)
    latency_ms: float = 0.0
    trace: StageTrace | None = None  # set when the lane does not apply (off, skipped, failed)
    degradation: Degradation | None = None


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class ExactMatchStage:
    """Finds the query's rare terms and the chunks in scope that hold them; promotes those."""

    def __init__(self, index: object, max_df: int, words: bool = False) -> None:
        """`max_df` 0 turns the lane off; an index without term statistics skips it;
        `words`: Latin words of 4+ letters count as specific too (not only terms with a
        digit)."""
        self._index = index if isinstance(index, WeightedSparseIndex) else None
        self._max_df = max_df
        self._words = words

    async def run(
        self, query: str, search_filter: SearchFilter, fused: list[FusedHit], mode: str,
    ) -> ExactMatchOutcome:
        """`lookup`, then `apply`: the lane in one call."""
        return self.apply(fused, await self.lookup(query, search_filter, mode))

    async def lookup(self, query: str, search_filter: SearchFilter, mode: str) -> Lookup:
        """The query's rare terms and the chunks holding them; never raises (a failure is in
        the result). Needs only the query, so the service runs it beside the channels."""
        if self._max_df <= 0:
            return Lookup(trace=StageTrace(status="off", reason="max_df 0"))
        if mode == "dense":
            return Lookup(trace=StageTrace(status="off", reason="mode dense"))
        if self._index is None:
            return Lookup(trace=StageTrace(
                status="skipped", reason="the search index reports no BM25 term statistics: "
                "rare exact matches rest on fusion alone"))
        start = time.perf_counter()
        try:
            terms, held = await asyncio.to_thread(self._held, self._index, query, search_filter)
        except Exception as exc:  # fusion's order stands; cancellation propagates
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("exact-match lane failed: %s", reason)
            return Lookup(trace=StageTrace(status="failed", reason=reason),
                          degradation=Degradation(code="exact_match_failed", reason=reason))
        return Lookup(tuple(terms), held, _ms(start))

    def apply(
        self, fused: list[FusedHit], lookup: Lookup, bm25_answered: bool = True
    ) -> ExactMatchOutcome:
        """`fused` with the candidates holding the rare terms first (pure). Without a BM25
        list (its channel failed: that is its degradation) the lane does not apply either."""
        if not bm25_answered and (lookup.trace is None or lookup.degradation is not None):
            return ExactMatchOutcome(fused, StageTrace(
                status="skipped", reason="no BM25 list (its channel failed)"))
        if lookup.trace is not None:
            return ExactMatchOutcome(fused, lookup.trace, lookup.degradation)
        candidates = {hit.chunk_id for hit in fused}
        promoted = sum(1 for chunk in lookup.held if chunk in candidates)
        detail: dict[str, float | int | str] = {
            "max_df": self._max_df, "rare_terms": " ".join(lookup.terms), "promoted": promoted,
            "latency_ms": lookup.latency_ms}
        if not promoted:
            reason = "no rare query term" if not lookup.terms else "no candidate holds a rare term"
            return ExactMatchOutcome(fused, StageTrace(status="skipped", reason=reason,
                                                       detail=detail))
        moved = promote(fused, lookup.held)
        before = [hit.chunk_id for hit in fused[:promoted]]
        detail["reordered"] = int(before != [hit.chunk_id for hit in moved[:promoted]])
        return ExactMatchOutcome(moved, StageTrace(status="applied", detail=detail))

    def _held(
        self, index: WeightedSparseIndex, query: str, search_filter: SearchFilter
    ) -> tuple[list[str], dict[str, int]]:
        """(rare terms, chunk id -> how many of them it holds), within the filter's scope."""
        kb_id = search_filter.kb_id
        _, analyze = index.sparse_analyzer(kb_id)
        tokens = analyze(query)
        chunks, doc_freq = index.sparse_term_stats(kb_id, sorted(set(tokens)))
        terms = rare_terms(tokens, doc_freq, effective_max_df(self._max_df, chunks),
                           self._words)
        held: dict[str, int] = {}
        for term in terms:
            for hit in index.search_sparse_weighted([(term, 1.0)], search_filter, self._max_df):
                held[hit.chunk_id] = held.get(hit.chunk_id, 0) + 1
        return terms, held
