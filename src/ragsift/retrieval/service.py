"""RetrievalService: scope -> channels (concurrently) -> fusion -> READY check -> top_k."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ragsift.config import Settings
from ragsift.domain.errors import NotFound, RetrievalUnavailable
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import Chunk, Document
from ragsift.domain.requests import Fusion, Mode, SearchRequest
from ragsift.domain.results import (
    ChannelHit,
    FusedHit,
    RankedList,
    RetrievalHit,
    RetrievalResult,
)
from ragsift.domain.trace import ChannelRun, Degradation, QueryVariant, RetrievalTrace
from ragsift.ports import Embedder, Repository, SearchIndex
from ragsift.retrieval.fusion import rrf, weighted_fusion
from ragsift.retrieval.query import validate_query
from ragsift.retrieval.scope import check_document_ids, resolve_whitelist

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Options:
    mode: Mode
    top_k: int
    candidate_k: int
    channel_k: int
    fusion: Fusion
    rrf_k: int
    weights: dict[str, float]


def _pick(value: T | None, default: T) -> T:
    return default if value is None else value


def _options(request: SearchRequest, settings: Settings) -> _Options:
    return _Options(
        mode=_pick(request.mode, settings.mode),
        top_k=_pick(request.top_k, settings.top_k),
        candidate_k=_pick(request.candidate_k, settings.candidate_k),
        channel_k=_pick(request.channel_k, settings.channel_k),
        fusion=_pick(request.fusion, settings.fusion),
        rrf_k=_pick(request.rrf_k, settings.rrf_k),
        weights={
            "dense": _pick(request.dense_weight, settings.dense_weight),
            "sparse": _pick(request.sparse_weight, settings.sparse_weight),
        },
    )


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _frozen(values: Sequence[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


class RetrievalService:
    """Selects the evidence for a query and records every stage in a RetrievalTrace."""

    def __init__(
        self,
        repository: Repository,
        index: SearchIndex,
        embedder: Embedder,
        settings: Settings,
    ) -> None:
        self._repository = repository
        self._index = index
        self._embedder = embedder
        self._settings = settings

    async def search(self, request: SearchRequest) -> RetrievalResult:
        """Run one retrieval; raises InvalidInput, NotFound or RetrievalUnavailable."""
        started = time.perf_counter()
        query = validate_query(request.query, self._settings.max_query_chars)
        options = _options(request, self._settings)
        if options.top_k > options.candidate_k:
            options = _with_candidates(options, options.top_k)
        requested_ids = check_document_ids(request.document_ids, self._settings.max_document_ids)
        timings: dict[str, float] = {}
        trace = RetrievalTrace(
            request_id=uuid.uuid4().hex,
            kb_id=request.kb_id,
            query=query,
            mode=options.mode,
            fusion=options.fusion,
            variants=(QueryVariant(text=query, method="original"),),
        )

        stage = time.perf_counter()
        if await asyncio.to_thread(self._repository.get_kb, request.kb_id) is None:
            raise NotFound(f"knowledge base {request.kb_id!r} does not exist")
        ready: set[str] = set()
        if requested_ids is not None:
            ready = await asyncio.to_thread(
                self._repository.ready_document_ids, request.kb_id, requested_ids
            )
        decision = resolve_whitelist(requested_ids, ready)
        timings["scope"] = _ms(stage)
        trace = trace.model_copy(update={"scope": decision.trace})
        if decision.allowed is not None and not decision.allowed:
            timings["total"] = _ms(started)
            return RetrievalResult(hits=(), trace=trace.model_copy(update={"timings_ms": timings}))

        search_filter = SearchFilter(
            kb_id=request.kb_id,
            document_ids=decision.allowed,
            sources=_frozen(request.sources),
            tenant_ids=_frozen(request.tenant_ids),
            dataset_ids=_frozen(request.dataset_ids),
            visibilities=_frozen(request.visibilities),
        )
        stage = time.perf_counter()
        lists, runs, degradations = await self._run_channels(query, search_filter, options)
        timings["channels"] = _ms(stage)

        stage = time.perf_counter()
        if options.fusion == "rrf":
            fused = rrf(lists, k=options.rrf_k, weights=options.weights)
        else:
            fused = weighted_fusion(lists, weights=options.weights)
        candidates = fused[: options.candidate_k]
        timings["fusion"] = _ms(stage)

        stage = time.perf_counter()
        hits, filtered = await asyncio.to_thread(self._hydrate, request.kb_id, candidates, options)
        timings["ready_check"] = _ms(stage)
        timings["total"] = _ms(started)
        trace = trace.model_copy(
            update={
                "channels": tuple(runs),
                "degradations": tuple(degradations),
                "fused_count": len(fused),
                "ready_filtered_count": filtered,
                "returned_count": len(hits),
                "timings_ms": timings,
            }
        )
        return RetrievalResult(hits=tuple(hits), trace=trace)

    async def _run_channels(
        self, query: str, search_filter: SearchFilter, options: _Options
    ) -> tuple[list[RankedList], list[ChannelRun], list[Degradation]]:
        """Run the mode's channels concurrently; a failed channel degrades, all failed raise."""
        channels: dict[str, Callable[[], Awaitable[list[ChannelHit]]]] = {}
        if options.mode in ("dense", "hybrid"):
            channels["dense"] = lambda: self._dense(query, search_filter, options.channel_k)
        if options.mode in ("sparse", "hybrid"):
            channels["sparse"] = lambda: asyncio.to_thread(
                self._index.search_sparse, query, search_filter, options.channel_k
            )
        outcomes = await asyncio.gather(
            *(_timed(run) for run in channels.values()), return_exceptions=True
        )
        lists: list[RankedList] = []
        runs: list[ChannelRun] = []
        degradations: list[Degradation] = []
        for channel, outcome in zip(channels, outcomes, strict=True):
            name = f"{channel}:original"
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome  # cancellation and interpreter exits are not degradations
                reason = f"{type(outcome).__name__}: {outcome}"
                logger.warning("%s retrieval failed: %s", channel, reason)
                runs.append(ChannelRun(
                    list_name=name, channel=channel,  # type: ignore[arg-type]
                    variant="original", candidates=0, latency_ms=0.0, error=reason,
                ))
                degradations.append(Degradation(
                    code=f"{channel}_retrieval_failed", reason=reason  # type: ignore[arg-type]
                ))
                continue
            hits, latency = outcome
            lists.append(RankedList(name=name, hits=tuple(hits)))
            runs.append(ChannelRun(
                list_name=name, channel=channel,  # type: ignore[arg-type]
                variant="original", candidates=len(hits), latency_ms=latency,
            ))
        if not lists:
            reasons = "; ".join(d.reason for d in degradations)
            raise RetrievalUnavailable(f"every retrieval channel failed: {reasons}")
        return lists, runs, degradations

    async def _dense(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        vector = await asyncio.to_thread(self._embedder.embed_query, query)
        return await asyncio.to_thread(self._index.search_dense, vector, search_filter, limit)

    def _hydrate(
        self, kb_id: str, candidates: Sequence[FusedHit], options: _Options
    ) -> tuple[list[RetrievalHit], int]:
        """Drop hits whose document is not READY (or whose chunk left the facts), keep top_k."""
        ready = self._repository.ready_document_ids(
            kb_id, {hit.document_id for hit in candidates}
        )
        kept = [hit for hit in candidates if hit.document_id in ready]
        chunks = {c.id: c for c in self._repository.get_chunks([h.chunk_id for h in kept])}
        kept = [hit for hit in kept if hit.chunk_id in chunks]
        filtered = len(candidates) - len(kept)
        final = kept[: options.top_k]
        documents = {
            doc.id: doc
            for doc in self._repository.get_documents(sorted({h.document_id for h in final}))
        }
        return [
            _to_hit(rank, hit, chunks[hit.chunk_id], documents.get(hit.document_id))
            for rank, hit in enumerate(final, start=1)
        ], filtered


async def _timed(
    run: Callable[[], Awaitable[list[ChannelHit]]],
) -> tuple[list[ChannelHit], float]:
    start = time.perf_counter()
    hits = await run()
    return hits, _ms(start)


def _with_candidates(options: _Options, candidate_k: int) -> _Options:
    return _Options(
        mode=options.mode, top_k=options.top_k, candidate_k=candidate_k,
        channel_k=max(options.channel_k, candidate_k), fusion=options.fusion,
        rrf_k=options.rrf_k, weights=options.weights,
    )


def _to_hit(rank: int, hit: FusedHit, chunk: Chunk, document: Document | None) -> RetrievalHit:
    return RetrievalHit(
        rank=rank,
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
        filename=document.filename if document else "",
        text=chunk.text,
        heading_path=chunk.heading_path,
        locator=chunk.locator,
        parent_id=chunk.parent_id,
        dense_rank=hit.channel_rank("dense"),
        dense_score=hit.channel_score("dense"),
        sparse_rank=hit.channel_rank("sparse"),
        sparse_score=hit.channel_score("sparse"),
        fusion_score=hit.fusion_score,
        retrieval_sources=hit.retrieval_sources,
    )
