"""RM3 pseudo-relevance feedback as a stage between the channels and fusion (off by default).

The first pass's lists are fused, the top fused chunks (READY, at the searched version) are
read, the BM25 query is expanded from them (feedback.py) and searched again; the expanded
list replaces the original query's BM25 list under the same name, so the normal fusion stage
fuses it with the same weight. Only for a query whose first BM25 search took under the
budget: the second search costs about as much again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit, FusedHit, RankedList
from ragsift.domain.trace import Degradation, StageTrace
from ragsift.retrieval.candidates import Candidate
from ragsift.retrieval.feedback import Rm3Config, expand_bm25_query, rm3_config_from
from ragsift.retrieval.fusion import fuse
from ragsift.retrieval.options import Options

logger = logging.getLogger(__name__)

_EXPANDED = "sparse:original"  # the list that is replaced: the original query's BM25 list


@runtime_checkable
class WeightedSparseIndex(Protocol):
    """An index with weighted BM25 queries over its analyzer's tokens (the embedded one)."""

    def sparse_analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]: ...

    def sparse_term_stats(
        self, kb_id: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]: ...

    def search_sparse_weighted(
        self, terms: Sequence[tuple[str, float]], search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]: ...


# fused hits -> the READY candidates among them, in fused order (at the searched version)
ReadyReader = Callable[[Sequence[FusedHit]], Awaitable[Sequence[Candidate]]]


@dataclass(frozen=True, slots=True)
class FeedbackOutcome:
    lists: tuple[RankedList, ...]
    trace: StageTrace
    degradation: Degradation | None = None


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class FeedbackStage:
    """Replaces the original query's BM25 list by the RM3-expanded query's."""

    def __init__(self, index: object, settings: Settings) -> None:
        """`index`: the search index; without weighted BM25 queries the stage is skipped."""
        self._index = index if isinstance(index, WeightedSparseIndex) else None
        self._config: Rm3Config = rm3_config_from(settings)
        self._budget_ms = settings.prf_budget_ms

    async def run(
        self, query: str, search_filter: SearchFilter, options: Options,
        lists: Sequence[RankedList], first_pass_ms: float,
        ready: ReadyReader,
    ) -> FeedbackOutcome:
        """`first_pass_ms`: the original query's BM25 search took; `ready`: the service's
        READY check."""
        kept = tuple(lists)
        why = self._why_not(options, kept, first_pass_ms)
        if why is not None:
            return FeedbackOutcome(kept, StageTrace(
                status="off" if why == "not requested" else "skipped", reason=why))
        assert self._index is not None
        start = time.perf_counter()
        try:
            expanded, detail = await self._expanded(
                self._index, query, search_filter, options, kept, ready
            )
        except Exception as exc:  # the first pass stands; cancellation propagates
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("feedback failed: %s", reason)
            return FeedbackOutcome(kept, StageTrace(status="failed", reason=reason),
                                   Degradation(code="feedback_failed", reason=reason))
        if expanded is None:
            return FeedbackOutcome(kept, StageTrace(
                status="skipped", reason="no READY feedback chunk", detail=detail))
        replaced = tuple(expanded if ranked.name == _EXPANDED else ranked for ranked in kept)
        detail.update({"first_pass_ms": first_pass_ms, "latency_ms": _ms(start)})
        return FeedbackOutcome(replaced, StageTrace(status="applied", detail=detail))

    def _why_not(
        self, options: Options, lists: Sequence[RankedList], first_pass_ms: float
    ) -> str | None:
        if not options.switches.feedback:
            return "not requested"
        if self._index is None:
            return "the search index has no weighted BM25 queries"
        if not any(ranked.name == _EXPANDED for ranked in lists):
            return "no BM25 list of the original query (mode dense, or BM25 failed)"
        if first_pass_ms > self._budget_ms:
            return (f"the first BM25 search took {first_pass_ms:g} ms, over "
                    f"RAGSIFT_PRF_BUDGET_MS={self._budget_ms:g}")
        return None

    async def _expanded(
        self, index: WeightedSparseIndex, query: str, search_filter: SearchFilter,
        options: Options, lists: tuple[RankedList, ...],
        ready: ReadyReader,
    ) -> tuple[RankedList | None, dict[str, float | int | str]]:
        config = self._config
        # a few more than needed: some fused hits may not be READY
        fused = fuse(options.fusion, list(lists), k=options.rrf_k, weights=options.weights,
                     limit=config.feedback_docs * 2)
        head = (await ready(fused))[: config.feedback_docs]
        detail: dict[str, float | int | str] = {"feedback_docs": len(head)}
        if not head:
            return None, detail
        kb_id = search_filter.kb_id
        terms = await asyncio.to_thread(
            self._expand, index, kb_id, query, [(c.chunk.text, c.fused.fusion_score)
                                               for c in head])
        hits = await asyncio.to_thread(
            index.search_sparse_weighted, terms, search_filter, options.channel_k
        )
        detail.update({"terms": len(terms), "candidates": len(hits)})
        return RankedList(name=_EXPANDED, hits=tuple(hits)), detail

    def _expand(
        self, index: WeightedSparseIndex, kb_id: str, query: str,
        hits: Sequence[tuple[str, float]],
    ) -> tuple[tuple[str, float], ...]:
        _, analyze = index.sparse_analyzer(kb_id)
        return expand_bm25_query(
            query, analyze, hits, lambda terms: index.sparse_term_stats(kb_id, terms),
            self._config,
        )
