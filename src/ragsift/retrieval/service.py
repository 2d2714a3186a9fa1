"""RetrievalService: scope -> variants x channels -> RM3 feedback -> fusion -> READY ->
auto-merge -> re-scorers -> rerank -> threshold -> top_k -> Small2Big, with every stage
recorded in the trace.

The stages live in document_stages.py (one `run` each); this module chains them and builds
the trace. The stages between READY and threshold share one interface (candidates.py), so a
new re-scorer is one more object in `rescorers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.filters import SearchFilter
from ragsift.domain.metadata_filter import Node
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import FusedHit, RankedList, RetrievalHit, RetrievalResult
from ragsift.domain.trace import (
    Degradation,
    StageTrace,
)
from ragsift.kb_settings import SearchDefaults
from ragsift.ports import (
    Embedder,
    QueryRewriter,
    Repository,
    Reranker,
    SearchIndex,
    TunedFusionStore,
    VersionReader,
)
from ragsift.retrieval.candidates import (
    Candidate,
    CandidateOutcome,
    CandidateStage,
    StageContext,
)
from ragsift.retrieval.channel_stage import ChannelStage, Retrieved, SecondDensePolicy
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.chunk_languages import ChunkLanguages
from ragsift.retrieval.document_stages import (
    AutoMergeStage,
    ExpandOutcome,
    HitStage,
    ReadyOutcome,
    ReadyStage,
    RerankCandidates,
    ScopeStage,
    Small2BigStage,
    threshold_stage,
)
from ragsift.retrieval.exact_match import ExactMatchOutcome, ExactMatchStage, Lookup
from ragsift.retrieval.faq import FaqSearcher
from ragsift.retrieval.feedback_stage import FeedbackOutcome, FeedbackStage
from ragsift.retrieval.fusion import Padding, fuse, fused_count
from ragsift.retrieval.multi_kb import (
    KbPart,
    KbTarget,
    hit_kbs,
    kb_traces,
    merge_kb_lists,
    merge_lookups,
    merged_timings,
)
from ragsift.retrieval.options import Options
from ragsift.retrieval.plan import RouteJudge, run_plan
from ragsift.retrieval.relevance import relevance
from ragsift.retrieval.scope_judge import ScopeJudge
from ragsift.retrieval.search_setup import SearchSetup
from ragsift.retrieval.service_trace import (
    TRACE_FIELDS,
    applied,
    candidate_stages,
    first_trace,
    padding_trace,
    some,
)
from ragsift.retrieval.stages import RerankLimits, cross_lingual_decision, kb_scripts


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


logger = logging.getLogger(__name__)

Observer = Callable[[RetrievalResult, int, int], None]
"""Told of each finished search: (result, start and end in ns since the epoch)."""

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
        rescorers: Sequence[CandidateStage] = (),
        kb_defaults: Callable[[str], SearchDefaults | None] | None = None,
    ) -> None:
        """`rescorers`: post-fusion stages run after auto-merge and before rerank;
        `kb_defaults`: a KB's own search defaults (ragsift/kb_settings.py) by kb id."""
        # told of every finished search (OpenTelemetry spans); never fails a search
        self._observer = observer
        self._settings = settings
        self._faq = None if faq_index is None else FaqSearcher(
            repository, faq_index, embedder, settings.faq_direct_answer_threshold, reranker
        )
        self._scope = ScopeStage(repository, versions)
        self._scope_judge = ScopeJudge(settings.kb_domains, index, rewriter,
                                       settings.llm_timeout_s)
        runner = ChannelRunner(index, embedder)
        second = SecondDensePolicy(
            settings.second_dense_queries, settings.second_dense_weight,
            settings.second_dense_all_weight, settings.second_dense_mixed_weight,
        ) if runner.has_second_dense and settings.second_dense != "off" else None
        self._retrieve = ChannelStage(
            runner, rewriter, settings.max_query_chars * 4,
            functools.partial(
                cross_lingual_decision, kb_scripts(repository, settings), settings, rewriter,
                second_dense=second is not None,
            ),
            translate=settings.cross_lingual, second_dense=second,
            history_aware=settings.history_aware,
            chunk_languages=ChunkLanguages(repository) if second is not None else None,
        )
        self._feedback = FeedbackStage(index, settings)
        self._exact = ExactMatchStage(index, settings.exact_match_max_df,
                                      settings.exact_match_words)
        self._ready = ReadyStage(repository, versions)
        self._rerank = RerankCandidates(reranker, embedder, RerankLimits(
            budget_tokens=settings.rerank_budget_tokens,
            margin_tokens=settings.rerank_margin_tokens,
            max_query_tokens=settings.rerank_max_query_tokens,
        ))
        self._candidate_stages = candidate_stages(
            AutoMergeStage(repository), rescorers, self._rerank
        )
        self._small2big = Small2BigStage(repository)
        self._hits = HitStage(repository, versions)
        self._setup = SearchSetup(repository, embedder, settings, self._rerank.query_tokens,
                                  tuning, versions, kb_defaults)

    async def search(self, request: SearchRequest) -> RetrievalResult:
        """Documents and FAQ side by side; raises InvalidInput, NotFound, RetrievalUnavailable
        and EmbeddingModelMismatch (an InvalidInput). With several `kb_ids`, one ranking over
        every KB's documents (retrieval/multi_kb.py); the FAQ search is then off."""
        # the KB and its version are read once per search (search_setup.py)
        resolved = await self._setup.resolve(request)
        kb = resolved.kb
        judge: RouteJudge | None = (
            None if kb is None else functools.partial(self._scope_judge.judge, kb.id, kb.name))
        # an observer with `searching` (OpenTelemetry) keeps a span current while it runs
        live = getattr(self._observer, "searching", None)
        with live() if live is not None else contextlib.nullcontext():
            started_ns = time.time_ns()
            result = await run_plan(
                resolved.request, self._settings,
                functools.partial(self._search_documents, targets=resolved.targets), self._faq,
                resolved.version_of, judge, faq_threshold=resolved.faq_threshold,
            )
            if self._observer is not None:
                try:
                    self._observer(result, started_ns, time.time_ns())
                except Exception:
                    logger.exception("the retrieval observer failed (the search did not)")
        return result

    async def _search_documents(
        self, request: SearchRequest, version: int | None,
        targets: tuple[KbTarget, ...] | None = None,
    ) -> RetrievalResult:
        """The document search of a plan at `version` (read once by the plan, see
        SearchSetup.version): chunks only, every stage in the trace. `targets`: several KBs,
        each at its version, their channel lists merged (multi_kb.py) before fusion."""
        started = time.perf_counter()
        query, options, requested_ids, query_tokens = await self._setup.prepare(request)
        several = targets is not None
        targets = targets or (KbTarget(request.kb_id, version),)
        trace = first_trace(request, query, options)
        metadata = self._setup.metadata_filter(request)
        parts = await asyncio.gather(*(
            self._kb_part(query, request, target, requested_ids, metadata, options)
            for target in targets))
        timings = merged_timings([part.timings for part in parts])
        trace = trace.model_copy(update={"scope": parts[0].scope.decision.trace,
                                         "kb_version": version})
        live = [part for part in parts if part.lists is not None]
        if not live:
            timings["total"] = _ms(started)
            return RetrievalResult(hits=(), trace=trace.model_copy(update={
                "timings_ms": timings, "kbs": kb_traces(parts, ()) if several else ()}))
        first = live[0]
        assert first.retrieved is not None and first.lists is not None
        options = next((p.options for p in live if p.retrieved is not None
                        and p.retrieved.second_dense_weight is not None), first.options)
        versions = {target.kb_id: target.version for target in targets} if several else None
        lists, padded, exact, ready = await self._fused_ready(
            request.kb_id, version, versions, live, options, timings)
        threshold, traces, degradations = await self._ranked(
            query, first.retrieved, ready.candidates, request.kb_id, version, options,
            query_tokens, timings)
        final = threshold.candidates[: options.top_k]

        expanded, hits = await self._expanded_hits(request, version, versions, final, options,
                                                   timings)
        timings["total"] = _ms(started)
        retrieved, feedback = first.retrieved, first.feedback
        assert feedback is not None
        failures = (*(d for part in live for d in part.degradations),
                    *some(exact.degradation), *degradations, *some(expanded.degradation))
        trace = trace.model_copy(update={
            "variants": retrieved.variants,
            "channels": tuple(run for part in live for run in part.runs),
            "degradations": failures,
            "switches_applied": applied(retrieved, traces, expanded, feedback.trace),
            "fused_count": fused_count(lists), "ready_filtered_count": ready.filtered,
            "rewrite": retrieved.rewrite.trace, "history": retrieved.history,
            "feedback": feedback.trace, "fusion_padding": padded, "exact_match": exact.trace,
            **traces,
            "threshold": threshold.trace, "small2big": expanded.trace,
            "returned_count": len(hits), "timings_ms": timings,
            **({"kbs": kb_traces(parts, hits),
                "hit_kbs": {hit.chunk_id: hit.kb_id or "" for hit in hits}} if several else {}),
        })
        return RetrievalResult(hits=hits, trace=trace)

    async def _fused_ready(
        self, kb_id: str, version: int | None, versions: dict[str, int | None] | None,
        live: Sequence[KbPart], options: Options, timings: dict[str, float],
    ) -> tuple[tuple[RankedList, ...], StageTrace, ExactMatchOutcome, ReadyOutcome]:
        """The KBs' lists merged and fused (with the exact-match lane), then the READY check
        (`versions`: each KB's version when the search covers several)."""
        lists = merge_kb_lists([part.lists or () for part in live], options.channel_k)
        stage = time.perf_counter()
        fused, padded, exact = self._fuse(
            options, lists, merge_lookups([part.lookup for part in live if part.lookup]))
        timings["fusion"] = _ms(stage)

        stage = time.perf_counter()
        ready = await (self._ready.run_kbs(versions, fused, hit_kbs(
            [(part.target.kb_id, part.lists or ()) for part in live])) if versions is not None
            else self._ready.run(kb_id, fused, version))
        timings["ready_check"] = _ms(stage)
        return lists, padded, exact, ready

    async def _ranked(
        self, query: str, retrieved: Retrieved, candidates: Sequence[Candidate], kb_id: str,
        version: int | None, options: Options, query_tokens: int, timings: dict[str, float],
    ) -> tuple[CandidateOutcome, dict[str, StageTrace], tuple[Degradation, ...]]:
        """The READY candidates through the candidate stages, then the score threshold."""
        # a follow-up is reranked as the question it stands for
        question, query_tokens = self._question(query, retrieved, options, query_tokens)
        context = StageContext(kb_id, options, version, query_tokens)
        ranked, traces, degradations = await self._runcandidate_stages(
            question, candidates, context, timings
        )
        threshold = threshold_stage(
            ranked, options.min_score, traces["rerank"].status == "applied"
        )
        return threshold, traces, degradations

    async def _expanded_hits(
        self, request: SearchRequest, version: int | None,
        versions: dict[str, int | None] | None, final: Sequence[Candidate], options: Options,
        timings: dict[str, float],
    ) -> tuple[ExpandOutcome, tuple[RetrievalHit, ...]]:
        """Small2Big on the final candidates, then the hits as callers see them."""
        stage = time.perf_counter()
        expanded = await self._small2big.run(final, options, version, versions)
        if expanded.ran:
            timings["small2big"] = _ms(stage)
        hits = await self._hits.run(
            final, expanded.expansions, lambda score: relevance(score, options.fusion),
            # a pinned version's hits show the metadata it was sealed with
            None if request.kb_version is None or version is None
            else (request.kb_id, version))
        return expanded, hits

    async def _kb_part(
        self, query: str, request: SearchRequest, target: KbTarget,
        requested_ids: tuple[str, ...] | None, metadata: Node | None, options: Options,
    ) -> KbPart:
        """One KB's part of a search: its scope, then its channels (with RM3 feedback) and
        the exact-match lane's look-up side by side; no lists when its scope is empty."""
        timings: dict[str, float] = {}
        if target.kb_id != request.kb_id:
            request = request.model_copy(update={"kb_id": target.kb_id})
        stage = time.perf_counter()
        scope = await self._scope.run(request, requested_ids, target.version, metadata)
        timings["scope"] = _ms(stage)
        if scope.search_filter is None:
            return KbPart(target, scope, timings, options)
        # the exact-match lane's term look-up needs only the query: it runs beside the channels
        lookup = asyncio.create_task(
            self._exact.lookup(query, scope.search_filter, options.mode))
        try:
            retrieved, feedback, options = await self._lists(
                query, request, scope.search_filter, options, target.version, timings)
        except BaseException:
            lookup.cancel()
            raise
        return KbPart(target, scope, timings, options, retrieved, feedback, await lookup)

    def _question(
        self, query: str, retrieved: Retrieved, options: Options, query_tokens: int
    ) -> tuple[str, int]:
        """The question later stages read, and its rerank tokens: a follow-up's standalone or
        contextual form when the reranker can take it, else the query."""
        question = retrieved.search_query
        if question == query:
            return query, query_tokens
        try:
            return question, self._rerank.query_tokens(question, options)
        except InvalidInput:  # over the reranker's query limit: the message as it was asked
            return query, query_tokens

    async def _lists(
        self, query: str, request: SearchRequest, search_filter: SearchFilter,
        options: Options, version: int | None, timings: dict[str, float],
    ) -> tuple[Retrieved, FeedbackOutcome, Options]:
        """The channels' lists (a follow-up's with its history), after RM3 feedback; options
        with the second dense weight."""
        kb_id = request.kb_id
        retrieved = await self._retrieve.run(query, search_filter, options, request.history)
        timings.update(retrieved.timings)
        if retrieved.second_dense_weight is not None:
            options = replace(options, weights={
                **options.weights, "second_dense": retrieved.second_dense_weight})
        feedback = await self._run_feedback(query, kb_id, search_filter, options, retrieved,
                                            version, timings)
        return retrieved, feedback, options

    def _fuse(
        self, options: Options, lists: Sequence[RankedList], lookup: Lookup,
    ) -> tuple[list[FusedHit], StageTrace, ExactMatchOutcome]:
        """Fusion (short BM25 lists padded), then the exact-match lane, then candidate_k."""
        padding = (Padding(options.channel_k, {"sparse": 0.0})
                   if self._settings.fusion_pad_short_lists else None)
        fused = fuse(options.fusion, list(lists), k=options.rrf_k, weights=options.weights,
                     padding=padding)
        bm25 = any(ranked.name.startswith("sparse:") for ranked in lists)
        exact = self._exact.apply(fused, lookup, bm25_answered=bm25)
        return exact.fused[: options.candidate_k], padding_trace(padding, options, lists), exact

    async def _run_feedback(
        self, query: str, kb_id: str, search_filter: SearchFilter, options: Options,
        retrieved: Retrieved, version: int | None, timings: dict[str, float],
    ) -> FeedbackOutcome:
        """RM3 feedback on the first pass's lists (timed when it ran)."""
        async def ready(fused: Sequence[FusedHit]) -> Sequence[Candidate]:
            return (await self._ready.run(kb_id, fused, version)).candidates

        first_pass = max((run.latency_ms for run in retrieved.runs
                          if run.list_name == "sparse:original"), default=0.0)
        stage = time.perf_counter()
        outcome = await self._feedback.run(
            query, search_filter, options, retrieved.lists, first_pass, ready
        )
        if outcome.trace.status in ("applied", "failed"):
            timings["feedback"] = _ms(stage)
        return outcome

    async def _runcandidate_stages(
        self, query: str, candidates: Sequence[Candidate], context: StageContext,
        timings: dict[str, float],
    ) -> tuple[tuple[Candidate, ...], dict[str, StageTrace], tuple[Degradation, ...]]:
        """Auto-merge, the re-scorers, rerank, in that order: (candidates, the traces of the
        stages the RetrievalTrace has a field for, by name, and the degradations)."""
        current = tuple(candidates)
        traces: dict[str, StageTrace] = {}
        degradations: list[Degradation] = []
        for candidate_stage in self._candidate_stages:
            stage = time.perf_counter()
            outcome = await candidate_stage.run(query, current, context)
            if outcome.ran:
                timings[candidate_stage.name] = _ms(stage)
            if outcome.degradation is not None:
                degradations.append(outcome.degradation)
            if candidate_stage.name in TRACE_FIELDS:
                traces[candidate_stage.name] = outcome.trace
            else:
                logger.debug("%s: %s (no trace field)", candidate_stage.name, outcome.trace)
            current = outcome.candidates
        return current, traces, tuple(degradations)
