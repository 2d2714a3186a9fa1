"""Runs every (query variant x channel) concurrently; failures become degradations."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragsift.domain.filters import SearchFilter
from ragsift.domain.requests import Mode
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.domain.retries import RetryTally, counting_retries
from ragsift.domain.trace import ChannelRun, Degradation
from ragsift.ports import Embedder, SearchIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ChannelOutcome:
    lists: list[RankedList]
    runs: list[ChannelRun]
    degradations: list[Degradation]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


# one channel search of one variant, run as its own task
Job = Callable[[], Awaitable[list[ChannelHit]]]
# a list's hits -> those it keeps (the second dense channel's, to one language in a mixed KB)
HitFilter = Callable[[list[ChannelHit]], list[ChannelHit]]


async def _timed(run: Job) -> tuple[list[ChannelHit], float]:
    start = time.perf_counter()
    hits = await run()
    return hits, _ms(start)


@runtime_checkable
class SecondDenseIndex(Protocol):
    """An index with a second dense channel that encodes the query itself (the embedded one)."""

    @property
    def second_dense_model(self) -> str | None: ...

    def search_second_dense(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]: ...


def second_dense_of(index: object) -> SecondDenseIndex | None:
    """`index` when it has a second dense channel switched on, else None."""
    if isinstance(index, SecondDenseIndex) and index.second_dense_model is not None:
        return index
    return None


class ChannelRunner:
    """Dense (embed the variant, cosine search) and sparse (BM25) for each variant, and the
    second dense channel for the variants asked for (when the index has one)."""

    def __init__(self, index: SearchIndex, embedder: Embedder) -> None:
        self._index = index
        self._embedder = embedder
        self._second = second_dense_of(index)

    @property
    def has_second_dense(self) -> bool:
        return self._second is not None

    async def run(
        self, variants: Sequence[tuple[str, str]], search_filter: SearchFilter, mode: Mode,
        limit: int,
    ) -> ChannelOutcome:
        """`variants` are (label, text) pairs; lists are named `channel:label`."""
        jobs: list[tuple[str, str, RetryTally, Job]] = []
        for label, text in variants:
            if mode in ("dense", "hybrid"):
                tally = RetryTally()  # retries of this variant's query embedding
                jobs.append(
                    ("dense", label, tally, self._dense_job(text, search_filter, limit, tally))
                )
            if mode in ("sparse", "hybrid"):
                jobs.append(("sparse", label, RetryTally(),
                             self._sparse_job(text, search_filter, limit)))
        return await self._gather(jobs)

    async def run_second_dense(
        self, label: str, text: str, search_filter: SearchFilter, limit: int,
        keep: HitFilter | None = None,
    ) -> ChannelOutcome:
        """The second dense channel for one variant (`second_dense:label`); none without one.

        `keep`: which of its hits the list holds (in the same worker thread as the search)."""
        if self._second is None:
            return ChannelOutcome([], [], [])
        return await self._gather([("second_dense", label, RetryTally(), self._second_job(
            self._second, text, search_filter, limit, keep))])

    async def _gather(self, jobs: list[tuple[str, str, RetryTally, Job]]) -> ChannelOutcome:
        outcomes = await asyncio.gather(*(_timed(job) for *_, job in jobs), return_exceptions=True)
        result = ChannelOutcome([], [], [])
        for (channel, label, tally, _), outcome in zip(jobs, outcomes, strict=True):
            name = f"{channel}:{label}"
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome  # cancellation is not a degradation
                reason = f"{name}: {type(outcome).__name__}: {outcome}"
                logger.warning("channel failed: %s", reason)
                result.runs.append(ChannelRun(
                    list_name=name, channel=channel,  # type: ignore[arg-type]
                    variant=label, candidates=0, latency_ms=0.0, error=reason,
                    retries=tally.retries,
                ))
                result.degradations.append(Degradation(
                    code=f"{channel}_retrieval_failed", reason=reason  # type: ignore[arg-type]
                ))
                continue
            hits, latency = outcome
            result.lists.append(RankedList(name=name, hits=tuple(hits)))
            result.runs.append(ChannelRun(
                list_name=name, channel=channel,  # type: ignore[arg-type]
                variant=label, candidates=len(hits), latency_ms=latency,
                retries=tally.retries,
            ))
        return result

    def _dense_job(
        self, text: str, search_filter: SearchFilter, limit: int, tally: RetryTally
    ) -> Job:
        def embed_and_search() -> list[ChannelHit]:
            with counting_retries(tally):
                vector = self._embedder.embed_query(text)
            return self._index.search_dense(vector, search_filter, limit)

        def job() -> Awaitable[list[ChannelHit]]:
            # one worker-thread hop for both: a hop costs ~0.1 ms, and the search needs the
            # vector before anything else can happen on this path
            return asyncio.to_thread(embed_and_search)

        return job

    @staticmethod
    def _second_job(
        index: SecondDenseIndex, text: str, search_filter: SearchFilter, limit: int,
        keep: HitFilter | None = None,
    ) -> Job:
        def search() -> list[ChannelHit]:
            hits = index.search_second_dense(text, search_filter, limit)
            return hits if keep is None else keep(hits)

        def job() -> Awaitable[list[ChannelHit]]:
            return asyncio.to_thread(search)

        return job

    def _sparse_job(
        self, text: str, search_filter: SearchFilter, limit: int
    ) -> Job:
        def job() -> Awaitable[list[ChannelHit]]:
            return asyncio.to_thread(self._index.search_sparse, text, search_filter, limit)

        return job
