"""RetrievalService: scope -> variants x channels -> fusion -> READY -> auto-merge -> rerank
-> threshold -> top_k -> Small2Big, with every stage recorded in the trace."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ragsift.config import Settings
from ragsift.domain.assets import Asset, AssetRef
from ragsift.domain.errors import (
    EmbeddingModelMismatch,
    InvalidInput,
    NotFound,
    RetrievalUnavailable,
)
from ragsift.domain.filters import valid_at
from ragsift.domain.models import Chunk, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import FusedHit, RetrievalHit, RetrievalResult
from ragsift.domain.trace import (
    Degradation,
    QueryVariant,
    RetrievalTrace,
    StageTrace,
    Switches,
)
from ragsift.observability.context import current_request_id
from ragsift.ports import (
    Embedder,
    QueryRewriter,
    Repository,
    Reranker,
    SearchIndex,
    TunedFusionStore,
    VersionReader,
)
from ragsift.retrieval.auto_merge import auto_merge, candidate
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.expansion import Expansion, plan_expansion
from ragsift.retrieval.faq import FaqSearcher
from ragsift.retrieval.fusion import fuse
from ragsift.retrieval.options import Options, resolve_options, wants_tuned_fusion
from ragsift.retrieval.plan import run_plan
from ragsift.retrieval.query import validate_query
from ragsift.retrieval.scope import check_document_ids, compile_filter, resolve_whitelist
from ragsift.retrieval.stages import (
    RerankLimits,
    check_rerank_query,
    rerank_stage,
    rewrite_stage,
)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


logger = logging.getLogger(__name__)

Observer = Callable[[RetrievalResult, int, int], None]
"""Told of each finished search: (result, start and end in ns since the epoch)."""

@dataclass(frozen=True, slots=True)
class _Candidate:
    """A fused candidate with its chunk (a parent after auto-merge) and rerank score."""

    fused: FusedHit
    chunk: Chunk
    filename: str
    merged_from: tuple[str, ...] = ()
    rerank_score: float | None = None

    @property
    def score(self) -> float:
        return self.fused.fusion_score if self.rerank_score is None else self.rerank_score


class RetrievalService:
    """Selects the evidence for a query and records every stage in a RetrievalTrace."""

    def __init__(
        self,
        repository: Repository,
        index: SearchIndex,
        embedder: Embedder,
        settings: Settings,
        rewriter: QueryRewriter | None = None,
        reranker: Reranker | None = None,
        faq_index: SearchIndex | None = None,
        tuning: TunedFusionStore | None = None,
        versions: VersionReader | None = None,
        observer: Observer | None = None,
    ) -> None:
        self._repository = repository
        # told of every finished search (OpenTelemetry spans); never fails a search
        self._observer = observer
        self._tuning = tuning
        self._versions = versions  # None: no KB versions (every chunk in every search)
        self._embedder = embedder
        self._channels = ChannelRunner(index, embedder)
        self._settings = settings
        self._rewriter = rewriter
        self._reranker = reranker
        self._faq = None if faq_index is None else FaqSearcher(
            repository, faq_index, embedder, settings.faq_direct_answer_threshold
        )
        self._rerank_limits = RerankLimits(
            budget_tokens=settings.rerank_budget_tokens,
            margin_tokens=settings.rerank_margin_tokens,
            max_query_tokens=settings.rerank_max_query_tokens,
        )

    async def search(self, request: SearchRequest) -> RetrievalResult:
        """Documents and FAQ side by side; raises InvalidInput, NotFound, RetrievalUnavailable
        and EmbeddingModelMismatch (an InvalidInput)."""
        # the KB is read once per search: for the embedder check here, and for the version
        kb = await asyncio.to_thread(self._repository.get_kb, request.kb_id)
        self._check_embedder(request, kb)
        started_ns = time.time_ns()
        result = await run_plan(
            request, self._settings, self._search_documents, self._faq,
            functools.partial(self._version, kb=kb),
        )
        if self._observer is not None:
            try:
                self._observer(result, started_ns, time.time_ns())
            except Exception:
                logger.exception("the retrieval observer failed (the search did not)")
        return result

    def _check_embedder(self, request: SearchRequest, kb: KnowledgeBase | None) -> None:
        """Refuse a dense search whose query vector would come from another model than the
        KB's vectors: their cosines mean nothing, and fusing them would do so silently.

        BM25 needs no embedding, so mode "sparse" is allowed; an unknown KB is left to the
        search itself (NotFound).
        """
        if (request.mode or self._settings.mode) == "sparse":
            return
        model = self._embedder.model_id
        if kb is not None and kb.embedding_model != model:
            raise EmbeddingModelMismatch(
                f"knowledge base {kb.name!r} was built with the embedding model "
                f"{kb.embedding_model}, but the configured embedder is {model}: their vectors "
                "cannot be compared. Configure the KB's model, re-ingest the KB with this one, "
                "or search it in mode sparse (BM25 needs no embedding)."
            )

    async def _search_documents(
        self, request: SearchRequest, version: int | None
    ) -> RetrievalResult:
        """The document search of a plan at `version` (read once by the plan, see _version):
        chunks only, every stage in the trace."""
        started = time.perf_counter()
        settings = self._settings
        query = validate_query(request.query, settings.max_query_chars)
        tuned = None
        if self._tuning is not None and wants_tuned_fusion(request, settings):
            tuned = await asyncio.to_thread(self._tuning.get_tuned_fusion, request.kb_id)
        options = resolve_options(request, settings, tuned)
        requested_ids = check_document_ids(request.document_ids, settings.max_document_ids)
        rerank_wanted = options.switches.rerank and self._reranker is not None
        query_tokens = (
            check_rerank_query(self._embedder, query, self._rerank_limits) if rerank_wanted else 0
        )
        timings: dict[str, float] = {}
        trace = RetrievalTrace(
            request_id=current_request_id(), kb_id=request.kb_id, query=query, mode=options.mode,
            fusion=options.fusion, switches_requested=options.switches,
            tuned_fusion=options.tuned_fusion,
            variants=(QueryVariant(text=query, method="original"),),
        )

        stage = time.perf_counter()
        ready: set[str] = set()
        if requested_ids is not None:
            ready = await asyncio.to_thread(
                self._repository.ready_document_ids if self._versions is None
                else self._versions.searchable_document_ids, request.kb_id, requested_ids
            )
        decision = resolve_whitelist(requested_ids, ready)
        timings["scope"] = _ms(stage)
        trace = trace.model_copy(update={"scope": decision.trace, "kb_version": version})
        if decision.allowed is not None and not decision.allowed:
            timings["total"] = _ms(started)
            return RetrievalResult(hits=(), trace=trace.model_copy(update={"timings_ms": timings}))
        search_filter = compile_filter(request, decision.allowed, version)

        # the original query's channels run while the rewriter thinks
        stage = time.perf_counter()
        original = asyncio.create_task(
            self._channels.run([("original", query)], search_filter, options.mode,
                               options.channel_k)
        )
        try:
            rewrite = await rewrite_stage(
                self._rewriter, options.switches.rewrite, query, settings.max_query_chars * 4
            )
        except BaseException:
            original.cancel()
            raise
        if rewrite.trace.status != "off":
            timings["rewrite"] = _ms(stage)
        outcome = await original
        lists, runs, degradations = outcome.lists, outcome.runs, outcome.degradations
        variants = [QueryVariant(text=query, method="original")]
        if rewrite.degradation is not None:
            degradations.append(rewrite.degradation)
        if rewrite.variant is not None:
            variants.append(rewrite.variant)
            extra = await self._channels.run(
                [("rewrite", rewrite.variant.text)], search_filter, options.mode,
                options.channel_k,
            )
            lists += extra.lists
            runs += extra.runs
            degradations += extra.degradations
        timings["channels"] = _ms(stage)
        if not lists:
            reasons = "; ".join(
                d.reason for d in degradations if d.code.endswith("_retrieval_failed")
            )
            raise RetrievalUnavailable(f"every retrieval channel failed: {reasons}")

        stage = time.perf_counter()
        fused = fuse(options.fusion, lists, k=options.rrf_k, weights=options.weights)
        timings["fusion"] = _ms(stage)

        stage = time.perf_counter()
        candidates, filtered = await asyncio.to_thread(
            self._ready_candidates, request.kb_id, fused[: options.candidate_k], version
        )
        timings["ready_check"] = _ms(stage)

        merge_trace = StageTrace(status="off", reason="not requested")
        if options.switches.auto_merge:
            stage = time.perf_counter()
            candidates, merge_trace = await asyncio.to_thread(
                self._auto_merge, candidates, options.auto_merge_threshold
            )
            timings["auto_merge"] = _ms(stage)

        rerank_trace = StageTrace(
            status="off",
            reason="not requested" if not options.switches.rerank else "no reranker configured",
        )
        if rerank_wanted and candidates:
            assert self._reranker is not None
            stage = time.perf_counter()
            result = await rerank_stage(
                self._reranker, self._embedder, query, query_tokens,
                [c.chunk.text for c in candidates], self._rerank_limits,
            )
            rerank_trace = result.trace
            if result.degradation is not None:
                degradations.append(result.degradation)
            if result.trace.status == "applied":
                candidates = [
                    replace(candidates[index], rerank_score=score)
                    for index, score in result.order
                ]
            timings["rerank"] = _ms(stage)

        threshold_trace = StageTrace(status="off", reason="no minimum score")
        if options.min_score is not None:
            reranked = rerank_trace.status == "applied"
            kept = [
                c for c in candidates
                if (c.rerank_score if reranked else c.fused.fusion_score) is not None
                and c.score >= options.min_score
                and (not reranked or c.rerank_score is not None)
            ]
            threshold_trace = StageTrace(
                status="applied",
                detail={"min_score": options.min_score,
                        "compared_with": "rerank_score" if reranked else "fusion_score",
                        "dropped": len(candidates) - len(kept)},
            )
            candidates = kept
        final = candidates[: options.top_k]

        expansions: dict[str, Expansion] = {}
        expand_trace = StageTrace(status="off", reason="not requested")
        if options.switches.small2big and final:
            stage = time.perf_counter()
            expansions, expand_trace, failure = await self._small2big(final, options, version)
            if failure is not None:
                degradations.append(failure)
            timings["small2big"] = _ms(stage)

        assets = await self._assets_of(final)
        hits = tuple(
            _to_hit(rank, c, expansions.get(c.chunk.id), assets)
            for rank, c in enumerate(final, start=1)
        )
        timings["total"] = _ms(started)
        applied = Switches(
            rewrite=rewrite.variant is not None,
            rerank=rerank_trace.status == "applied",
            small2big=expand_trace.status == "applied",
            auto_merge=merge_trace.status == "applied",
        )
        trace = trace.model_copy(update={
            "variants": tuple(variants), "channels": tuple(runs),
            "degradations": tuple(degradations), "switches_applied": applied,
            "fused_count": len(fused), "ready_filtered_count": filtered,
            "rewrite": rewrite.trace, "auto_merge": merge_trace, "rerank": rerank_trace,
            "threshold": threshold_trace, "small2big": expand_trace,
            "returned_count": len(hits), "timings_ms": timings,
        })
        return RetrievalResult(hits=hits, trace=trace)

    async def _version(self, request: SearchRequest, kb: KnowledgeBase | None) -> int | None:
        """The KB version this request searches: the active one, or the one it pins.

        Read once, at the start of the plan: the documents and the FAQ search that one
        version, so an activation meanwhile never mixes two versions into one answer.
        NotFound for an unknown KB (`kb`: the KB as search() read it).
        """
        if kb is None:
            raise NotFound(f"knowledge base {request.kb_id!r} does not exist")
        if self._versions is None:
            if request.kb_version is not None:
                raise InvalidInput("this service keeps no knowledge-base versions")
            return None
        return await asyncio.to_thread(
            self._versions.searchable_version, request.kb_id, request.kb_version
        )

    def _ready_candidates(
        self, kb_id: str, fused: Sequence[FusedHit], version: int | None = None
    ) -> tuple[list[_Candidate], int]:
        """Candidates whose document is READY and whose chunk is in the facts, in order;
        with a version, only chunks valid in that version."""
        ids = [hit.chunk_id for hit in fused]
        found = {
            chunk.id: (chunk, filename)
            for chunk, filename in (
                self._repository.get_ready_chunks(kb_id, ids) if version is None
                or self._versions is None else self._versions.get_chunks_at(kb_id, ids, version)
            )
        }
        candidates = [
            _Candidate(hit, *found[hit.chunk_id]) for hit in fused if hit.chunk_id in found
        ]
        return candidates, len(fused) - len(candidates)

    def _auto_merge(
        self, candidates: list[_Candidate], threshold: int
    ) -> tuple[list[_Candidate], StageTrace]:
        parents = {
            c.id: c for c in self._repository.get_ancestors([x.chunk.id for x in candidates])
        }
        merged = auto_merge(
            [candidate(c.chunk, c.fused.fusion_score) for c in candidates], parents, threshold
        )
        by_id = {c.chunk.id: c for c in candidates}
        result: list[_Candidate] = []
        for entry in merged:
            if not entry.is_merged:
                result.append(by_id[entry.chunk_id])
                continue
            # the best-ranked original candidate lends the parent its fusion data
            best = next(by_id[m] for m in entry.merged_from if m in by_id)
            result.append(
                _Candidate(best.fused, parents[entry.chunk_id], best.filename, entry.merged_from)
            )
        count = sum(1 for entry in merged if entry.is_merged)
        if not count:
            reason = f"no parent had {threshold} or more children among the candidates"
            return result, StageTrace(status="skipped", reason=reason)
        return result, StageTrace(status="applied", detail={"merged_parents": count})

    async def _assets_of(self, final: Sequence[_Candidate]) -> dict[str, Asset]:
        """The assets the final hits' chunks name, in one query (none when none do)."""
        ids = {asset for c in final for asset in c.chunk.asset_ids}
        if not ids:
            return {}
        return await asyncio.to_thread(self._repository.get_assets, ids)

    async def _small2big(
        self, final: Sequence[_Candidate], options: Options, version: int | None = None
    ) -> tuple[dict[str, Expansion], StageTrace, Degradation | None]:
        hits = [c.chunk for c in final if not c.merged_from]  # a merged parent is context already
        try:
            neighbours = await asyncio.to_thread(
                self._repository.get_neighbours, hits, options.small2big_window
            )
            if version is not None:  # a document's rows of other versions share ordinals
                neighbours = [n for n in neighbours
                              if valid_at(n.valid_from_seq, n.valid_to_seq, version)]
            planned = plan_expansion(
                hits, neighbours, options.small2big_window, options.small2big_budget
            )
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            return {}, StageTrace(status="failed", reason=reason), Degradation(
                code="expansion_failed", reason=reason
            )
        expansions = {e.chunk_id: e for e in planned}
        added = sum(len(e.context_chunk_ids) - 1 for e in planned)
        return expansions, StageTrace(
            status="applied",
            detail={"window": options.small2big_window, "budget_tokens": options.small2big_budget,
                    "context_tokens": sum(e.token_count for e in planned),
                    "neighbours_added": added},
        ), None


def _to_hit(
    rank: int, c: _Candidate, expansion: Expansion | None, assets: dict[str, Asset]
) -> RetrievalHit:
    hit, chunk = c.fused, c.chunk
    return RetrievalHit(
        rank=rank, chunk_id=chunk.id, document_id=chunk.document_id, filename=c.filename,
        text=chunk.text, heading_path=chunk.heading_path, locator=chunk.locator,
        parent_id=chunk.parent_id,
        dense_rank=hit.channel_rank("dense"), dense_score=hit.channel_score("dense"),
        sparse_rank=hit.channel_rank("sparse"), sparse_score=hit.channel_score("sparse"),
        fusion_score=hit.fusion_score, rerank_score=c.rerank_score,
        retrieval_sources=hit.retrieval_sources, merged_from=c.merged_from,
        context_chunk_ids=expansion.context_chunk_ids if expansion else (),
        context_text=expansion.text if expansion else None,
        assets=tuple(AssetRef.of(assets[i]) for i in chunk.asset_ids if i in assets),
    )
