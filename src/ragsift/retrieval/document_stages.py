"""The stages of a document search, one `run` each: scope, channels (with the rewrite), READY
check, auto-merge, rerank, threshold, Small2Big and the hits; RetrievalService chains them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragsift.domain.assets import Asset, AssetRef
from ragsift.domain.filters import SearchFilter, valid_at
from ragsift.domain.metadata_filter import Node
from ragsift.domain.models import PARENT_LEVEL, SECTION_LEVEL, Chunk
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import FusedHit, RetrievalHit
from ragsift.domain.trace import Degradation, StageTrace
from ragsift.domain.trusted import TrustedBuilder
from ragsift.ports import Repository, Reranker, Tokenizer, VersionReader
from ragsift.retrieval.auto_merge import Candidate as MergeCandidate
from ragsift.retrieval.auto_merge import auto_merge, candidate
from ragsift.retrieval.candidates import (
    Candidate,
    CandidateOutcome,
    StageContext,
    off,
)
from ragsift.retrieval.expansion import Expansion, plan_expansion
from ragsift.retrieval.options import Options
from ragsift.retrieval.scope import ScopeDecision, compile_filter, resolve_whitelist
from ragsift.retrieval.scope_metadata import FilterRecords, narrow_by_filter
from ragsift.retrieval.stages import (
    RerankLimits,
    check_rerank_query,
    rerank_stage,
)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


@dataclass(frozen=True, slots=True)
class ScopeOutcome:
    decision: ScopeDecision
    search_filter: SearchFilter | None  # None: the whitelist left no document to search


class ScopeStage:
    """The document whitelist intersected with the searchable documents, then the filter."""

    def __init__(self, repository: Repository, versions: VersionReader | None) -> None:
        self._repository = repository
        self._versions = versions
        self._records = FilterRecords(repository, versions)

    async def run(
        self, request: SearchRequest, requested_ids: tuple[str, ...] | None, version: int | None,
        metadata_filter: Node | None = None,
    ) -> ScopeOutcome:
        ready: set[str] = set()
        if requested_ids is not None:
            ready = await asyncio.to_thread(
                self._repository.ready_document_ids if self._versions is None
                else self._versions.searchable_document_ids, request.kb_id, requested_ids
            )
        decision = resolve_whitelist(requested_ids, ready)
        if decision.allowed is not None and not decision.allowed:
            return ScopeOutcome(decision, None)
        terms = None
        if metadata_filter is not None:
            # pushed down as the document allow-list both channels already filter on; a
            # search of the KB as it is now sends it as terms too, for a BM25 index holding
            # them (metadata_terms.py); a pinned version is filtered on the metadata it was
            # sealed with
            scope = compile_filter(request, None, version)
            if requested_ids is None and request.kb_version is None:
                matched, terms = await asyncio.to_thread(
                    self._records.matching_and_terms, request.kb_id, metadata_filter, scope)
            else:
                matched = await asyncio.to_thread(
                    self._records.matching, request.kb_id, metadata_filter, scope,
                    version if request.kb_version is not None else None)
            decision = narrow_by_filter(decision, matched)
            if decision.allowed is not None and not decision.allowed:
                return ScopeOutcome(decision, None)
        return ScopeOutcome(decision, compile_filter(request, decision.allowed, version, terms))



@dataclass(frozen=True, slots=True)
class ReadyOutcome:
    candidates: tuple[Candidate, ...]
    filtered: int  # fused hits dropped: document not READY, or chunk not in the facts


class ReadyStage:
    """Candidates whose document is READY and whose chunk is in the facts, in fused order;
    with a version, only chunks valid in that version."""

    def __init__(self, repository: Repository, versions: VersionReader | None) -> None:
        self._repository = repository
        self._versions = versions

    async def run(
        self, kb_id: str, fused: Sequence[FusedHit], version: int | None
    ) -> ReadyOutcome:
        return await asyncio.to_thread(self._check, {kb_id: version}, fused, None)

    async def run_kbs(
        self, versions: Mapping[str, int | None], fused: Sequence[FusedHit],
        kb_of: Mapping[str, str],
    ) -> ReadyOutcome:
        """The check of a search over several KBs: each chunk in its KB (`kb_of`: chunk id
        -> KB id) at that KB's version (`versions`)."""
        return await asyncio.to_thread(self._check, versions, fused, kb_of)

    def _check(self, versions: Mapping[str, int | None], fused: Sequence[FusedHit],
               kb_of: Mapping[str, str] | None) -> ReadyOutcome:
        ids = [hit.chunk_id for hit in fused]
        groups = {next(iter(versions)): ids} if kb_of is None else _by_kb(ids, kb_of)
        found: dict[str, tuple[Chunk, str]] = {}
        for kb_id, chunk_ids in groups.items():
            version = versions[kb_id]
            rows = (
                self._repository.get_ready_chunks(kb_id, chunk_ids) if version is None
                or self._versions is None
                else self._versions.get_chunks_at(kb_id, chunk_ids, version)
            )
            found.update((chunk.id, (chunk, filename)) for chunk, filename in rows)
        candidates = tuple(
            Candidate(hit, *found[hit.chunk_id]) for hit in fused if hit.chunk_id in found
        )
        return ReadyOutcome(candidates, len(fused) - len(candidates))


class AutoMergeStage:
    """Replaces enough sibling candidates by their parent (a candidate stage)."""

    name = "auto_merge"

    def __init__(self, repository: Repository) -> None:
        self._repository = repository

    async def run(
        self, query: str, candidates: Sequence[Candidate], context: StageContext
    ) -> CandidateOutcome:
        if not context.options.switches.auto_merge:
            return off(candidates, "not requested")
        return await asyncio.to_thread(self._merge, candidates, context.options)

    def _merge(self, candidates: Sequence[Candidate], options: Options) -> CandidateOutcome:
        threshold = options.auto_merge_threshold
        parents = {
            c.id: c for c in self._repository.get_ancestors([x.chunk.id for x in candidates])
        }
        # a merged parent is the answer's context: with Small2Big on, it must fit its budget
        budget = options.small2big_budget if options.switches.small2big else None
        merged = auto_merge(
            [_candidate(c, parents) for c in candidates], parents, threshold,
            {PARENT_LEVEL: threshold, SECTION_LEVEL: options.auto_merge_section_threshold},
            budget,
        )
        by_id = {c.chunk.id: c for c in candidates}
        result: list[Candidate] = []
        for entry in merged:
            if not entry.is_merged:
                result.append(by_id[entry.chunk_id])
                continue
            # the best-ranked original candidate lends the parent its fusion data
            best = next(by_id[m] for m in entry.merged_from if m in by_id)
            result.append(
                Candidate(best.fused, parents[entry.chunk_id], best.filename, entry.merged_from)
            )
        count = sum(1 for entry in merged if entry.is_merged)
        if not count:
            reason = f"no parent had {threshold} or more children among the candidates"
            return CandidateOutcome(tuple(result), StageTrace(status="skipped", reason=reason))
        sections = sum(1 for entry in merged if entry.is_merged and entry.level == SECTION_LEVEL)
        detail: dict[str, float | int | str] = {"merged_parents": count - sections}
        if sections:
            detail["merged_sections"] = sections
        return CandidateOutcome(tuple(result), StageTrace(status="applied", detail=detail))


def _candidate(found: Candidate, parents: Mapping[str, Chunk]) -> MergeCandidate:
    """The auto-merge candidate of a fused one; `whole` when it is its parent's only child."""
    chunk = found.chunk
    parent = parents.get(chunk.parent_id) if chunk.parent_id is not None else None
    return replace(candidate(chunk, found.fused.fusion_score),
                   whole=parent is not None and parent.text == chunk.text)


class RerankCandidates:
    """The cross-encoder over the fused prefix that fits its budget (a candidate stage)."""

    name = "rerank"

    def __init__(
        self, reranker: Reranker | None, tokenizer: Tokenizer, limits: RerankLimits
    ) -> None:
        if min(limits.budget_tokens, limits.max_query_tokens) <= 0 or limits.margin_tokens < 0:
            raise ValueError(f"rerank limits must be positive: {limits}")
        self._reranker = reranker
        self._tokenizer = tokenizer
        self._limits = limits

    def wanted(self, options: Options) -> bool:
        return options.switches.rerank and self._reranker is not None

    def query_tokens(self, query: str, options: Options) -> int:
        """The query's tokens when it will be reranked (InvalidInput when too long), else 0."""
        if not self.wanted(options):
            return 0
        return check_rerank_query(self._tokenizer, query, self._limits)

    async def run(
        self, query: str, candidates: Sequence[Candidate], context: StageContext
    ) -> CandidateOutcome:
        options = context.options
        if self._reranker is None or not options.switches.rerank or not candidates:
            reason = "not requested" if not options.switches.rerank else "no reranker configured"
            return off(candidates, reason)
        result = await rerank_stage(
            self._reranker, self._tokenizer, query, context.query_tokens,
            [c.chunk.text for c in candidates], self._limits,
        )
        ordered = tuple(candidates)
        if result.trace.status == "applied":
            ordered = tuple(
                replace(candidates[index], rerank_score=score) for index, score in result.order
            )
        return CandidateOutcome(ordered, result.trace, result.degradation)


def threshold_stage(
    candidates: Sequence[Candidate], min_score: float | None, reranked: bool
) -> CandidateOutcome:
    """Drops candidates under the minimum score (rerank score when reranked, else fusion)."""
    if min_score is None:
        return off(candidates, "no minimum score")
    kept = tuple(
        c for c in candidates
        if (c.rerank_score if reranked else c.fused.fusion_score) is not None
        and c.score >= min_score
        and (not reranked or c.rerank_score is not None)
    )
    return CandidateOutcome(kept, StageTrace(
        status="applied",
        detail={"min_score": min_score,
                "compared_with": "rerank_score" if reranked else "fusion_score",
                "dropped": len(candidates) - len(kept)},
    ))


@dataclass(frozen=True, slots=True)
class ExpandOutcome:
    expansions: Mapping[str, Expansion]  # by hit chunk id
    trace: StageTrace
    degradation: Degradation | None = None
    ran: bool = True


class Small2BigStage:
    """Same-parent neighbours of each final hit as its context, within a token budget."""

    def __init__(self, repository: Repository) -> None:
        self._repository = repository

    async def run(
        self, final: Sequence[Candidate], options: Options, version: int | None,
        versions: Mapping[str, int | None] | None = None,
    ) -> ExpandOutcome:
        """`versions`: each KB's version, for a search over several (then `version` unused)."""
        if not options.switches.small2big or not final:
            return ExpandOutcome({}, StageTrace(status="off", reason="not requested"), ran=False)
        hits = [c.chunk for c in final if not c.merged_from]  # a merged parent is context already
        # ... and its tokens are spent first: the budget holds for the whole answer
        merged_tokens = sum(c.chunk.token_count for c in final if c.merged_from)
        try:
            neighbours = await asyncio.to_thread(
                self._repository.get_neighbours, hits, options.small2big_window
            )
            # a document's rows of other versions share ordinals
            neighbours = [n for n in neighbours if _in_version(
                n, version if versions is None else versions.get(n.kb_id))]
            planned = plan_expansion(
                hits, neighbours, options.small2big_window,
                max(0, options.small2big_budget - merged_tokens),
            )
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            return ExpandOutcome({}, StageTrace(status="failed", reason=reason), Degradation(
                code="expansion_failed", reason=reason
            ))
        added = sum(len(e.context_chunk_ids) - 1 for e in planned)
        return ExpandOutcome({e.chunk_id: e for e in planned}, StageTrace(
            status="applied",
            detail={"window": options.small2big_window, "budget_tokens": options.small2big_budget,
                    "context_tokens": sum(e.token_count for e in planned),
                    "neighbours_added": added},
        ))


def _in_version(chunk: Chunk, version: int | None) -> bool:
    return version is None or valid_at(chunk.valid_from_seq, chunk.valid_to_seq, version)


class HitStage:
    """The final hits, ranked, with their context and the assets their chunks name."""

    def __init__(self, repository: Repository, versions: VersionReader | None = None) -> None:
        self._repository = repository
        self._versions = versions

    async def run(
        self, final: Sequence[Candidate], expansions: Mapping[str, Expansion],
        relevance: Callable[[float], float] | None = None,
        pinned: tuple[str, int] | None = None,
    ) -> tuple[RetrievalHit, ...]:
        """`relevance`: the calibrated relevance of a fused score (None: left unset);
        `pinned`: (kb id, version) of a search pinned to a version, whose hits carry the
        metadata that version was sealed with (the current where it kept none)."""
        assets = await self._assets_of(final)
        documents = {c.chunk.document_id for c in final}
        sealed = await asyncio.to_thread(self._versions.version_metadata, *pinned) if (
            final and pinned is not None and self._versions is not None) else None
        metadata = ({doc: sealed.get(doc, {}) for doc in documents} if sealed is not None
                    else await asyncio.to_thread(self._repository.document_metadata, documents)
                    if final else {})
        return tuple(
            _to_hit(rank, c, expansions.get(c.chunk.id), assets,
                    metadata.get(c.chunk.document_id, {}),
                    None if relevance is None else relevance(c.fused.fusion_score))
            for rank, c in enumerate(final, start=1)
        )

    async def _assets_of(self, final: Sequence[Candidate]) -> dict[str, Asset]:
        """The assets the final hits' chunks name, in one query (none when none do)."""
        ids = {asset for c in final for asset in c.chunk.asset_ids}
        if not ids:
            return {}
        return await asyncio.to_thread(self._repository.get_assets, ids)


_hit = TrustedBuilder(RetrievalHit)


def _to_hit(
    rank: int, c: Candidate, expansion: Expansion | None, assets: dict[str, Asset],
    metadata: dict[str, Any], relevance: float | None = None,
) -> RetrievalHit:
    # unvalidated: every value comes typed from validated chunks, fused hits and expansions
    hit, chunk = c.fused, c.chunk
    dense_rank, dense_score = hit.channel_hit("dense") or (None, None)
    sparse_rank, sparse_score = hit.channel_hit("sparse") or (None, None)
    second_rank, second_score = hit.channel_hit("second_dense") or (None, None)
    return _hit({
        "rank": rank, "chunk_id": chunk.id, "document_id": chunk.document_id,
        "filename": c.filename, "text": chunk.text, "heading_path": chunk.heading_path,
        "locator": chunk.locator, "parent_id": chunk.parent_id,
        "dense_rank": dense_rank, "dense_score": dense_score,
        "sparse_rank": sparse_rank, "sparse_score": sparse_score,
        "second_dense_rank": second_rank, "second_dense_score": second_score,
        "fusion_score": hit.fusion_score, "rerank_score": c.rerank_score,
        "relevance": relevance,
        "retrieval_sources": hit.retrieval_sources, "merged_from": c.merged_from,
        "context_chunk_ids": expansion.context_chunk_ids if expansion else (),
        "context_text": expansion.text if expansion else None,
        "assets": tuple(AssetRef.of(assets[i]) for i in chunk.asset_ids if i in assets),
        "metadata": metadata, "kb_id": chunk.kb_id,
    })


def _by_kb(chunk_ids: Sequence[str], kb_of: Mapping[str, str]) -> dict[str, list[str]]:
    """The chunk ids grouped by KB, each group in the given order."""
    groups: dict[str, list[str]] = {}
    for chunk in chunk_ids:
        groups.setdefault(kb_of[chunk], []).append(chunk)
    return groups
