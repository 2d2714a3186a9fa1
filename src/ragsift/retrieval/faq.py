"""FaqSearcher: the FAQ collection searched like the documents (channels, fusion), kept apart.

The FAQ index holds one record per entry: its dense vector embeds the QUESTION only (a user's
query is compared with the curated question, which keeps the cosine calibrated for the
direct-answer threshold), while BM25 indexes question AND answer (so a query naming a term that
only the answer contains, an error code say, still finds the entry).

FAQ search differs from document search on purpose: no minimum score and no context expansion,
and the document whitelist does not apply to it. It runs per query variant (the fast probe is
the original question alone; the plan's main search adds the document search's variants,
retrieval/faq_probe.py), merges the variants by faq_id keeping the higher score
(retrieval/faq_merge.py) and reranks once when rerank is on.

The data scope applies: an entry carries source, tenant, dataset, visibility, allowed
roles and its KB-version window like a chunk, the request's scope and version are pushed down to
the FAQ index as the same typed filter, and every candidate is re-checked against the relational
store (scope and version included), so an entry deleted, retired or out of scope never reaches
a caller.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ragsift.domain.faq import FaqEntry, faq_visible
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import FaqHit, FusedHit, RankedList
from ragsift.domain.trace import Degradation, QueryVariant, StageTrace
from ragsift.ports import Embedder, Repository, Reranker, SearchIndex
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.faq_merge import best_dense, merge_variants
from ragsift.retrieval.fusion import fused_count
from ragsift.retrieval.options import Options

logger = logging.getLogger(__name__)


def faq_index_text(entry: FaqEntry) -> str:
    """The text BM25 indexes for an entry: question and answer."""
    return f"{entry.question}\n{entry.answer}"


def faq_records(entries: Sequence[FaqEntry]) -> list[IndexRecord]:
    """Index records of FAQ entries: the entry id stands for both chunk and document id; the
    scope fields and the version window are the entry's, filtered on as for chunks."""
    return [
        IndexRecord(
            chunk_id=e.id, document_id=e.id, kb_id=e.kb_id, text=faq_index_text(e),
            source=e.source, tenant_id=e.tenant_id, dataset_id=e.dataset_id,
            visibility=e.visibility, allowed_roles=e.allowed_roles,
            valid_from_seq=e.valid_from_seq, valid_to_seq=e.valid_to_seq,
        )
        for e in entries
    ]


@dataclass(frozen=True, slots=True)
class FaqOutcome:
    """FAQ hits with the stage's trace, its degradations and how long it took; `lists` are
    the channel lists it fused and `kept` how many live candidates it had before top-k (what
    a main search may reuse of a probe)."""

    hits: tuple[FaqHit, ...]
    trace: StageTrace
    degradations: tuple[Degradation, ...] = ()
    latency_ms: float | None = None
    lists: tuple[RankedList, ...] = ()
    kept: int = 0


def _failed(reason: str, degradations: tuple[Degradation, ...] = ()) -> FaqOutcome:
    logger.warning("FAQ search failed: %s", reason)
    if not degradations:
        degradations = (Degradation(code="faq_retrieval_failed", reason=reason),)
    return FaqOutcome((), StageTrace(status="failed", reason=reason), degradations)


class FaqSearcher:
    """Dense + BM25 over the FAQ index, per variant, merged by faq_id, reranked when asked,
    a facts check, a direct answer.

    The top hit is a direct answer when the dense cosine between a query variant and its
    question is at least `direct_answer_threshold` (Settings.faq_direct_answer_threshold).
    """

    def __init__(
        self, repository: Repository, index: SearchIndex, embedder: Embedder,
        direct_answer_threshold: float, reranker: Reranker | None = None,
    ) -> None:
        self._repository = repository
        self._channels = ChannelRunner(index, embedder)
        self._threshold = direct_answer_threshold
        self._reranker = reranker

    async def search(
        self, search_filter: SearchFilter, query: str, options: Options, top_k: int
    ) -> FaqOutcome:
        """The FAQ entries within `search_filter` (KB, scope, version; its document whitelist
        is ignored) for the original query alone: the fast probe, never reranked. Never
        raises but on cancellation: a failure becomes a failed stage and a degradation."""
        return await self.search_variants(
            search_filter, (QueryVariant(text=query, method="original"),), options, top_k,
            rerank=False)

    def reranks(self, options: Options) -> bool:
        """Whether a main search with these options reranks (on, and a reranker is set)."""
        return self._reranker is not None and options.switches.rerank

    async def search_variants(
        self, search_filter: SearchFilter, variants: Sequence[QueryVariant], options: Options,
        top_k: int, reuse: FaqOutcome | None = None, rerank: bool = True,
    ) -> FaqOutcome:
        """The entries for every variant (the first is the question reranked against, when
        `rerank` and reranks(options)); with `reuse`, its lists stand for the variants it
        searched and only the others are searched."""
        started = time.perf_counter()
        # documents' whitelist and metadata do not apply to FAQ entries
        scoped = search_filter.model_copy(update={"document_ids": None, "metadata_terms": None})
        try:
            outcome = await self._search(scoped, variants, options, top_k, reuse, rerank)
        except Exception as exc:
            outcome = _failed(f"{type(exc).__name__}: {exc}")
        latency = round((time.perf_counter() - started) * 1000, 3)
        return replace(outcome, latency_ms=latency)

    async def _search(
        self, search_filter: SearchFilter, variants: Sequence[QueryVariant], options: Options,
        top_k: int, reuse: FaqOutcome | None, rerank: bool,
    ) -> FaqOutcome:
        kb_id = search_filter.kb_id
        entries = await asyncio.to_thread(
            self._repository.count_faq_entries, kb_id, search_filter.version_seq)
        if not entries:
            return FaqOutcome((), StageTrace(status="skipped", reason="no FAQ entries in the KB"))
        labelled = [(_variant_label(i, v), v.text) for i, v in enumerate(variants)]
        reused = reuse.lists if reuse is not None else ()
        done = {ranked.name.split(":", 1)[1] for ranked in reused}
        todo = [pair for pair in labelled if pair[0] not in done]
        channels = await self._channels.run(
            todo, search_filter, options.mode, max(options.channel_k, top_k))
        degradations = tuple(
            Degradation(code="faq_retrieval_failed", reason=f"faq {d.reason}")
            for d in channels.degradations
        )
        lists = (*reused, *channels.lists)
        if not lists:
            return _failed("; ".join(d.reason for d in degradations), degradations)
        candidates = merge_variants(options.fusion, lists, options.rrf_k, options.weights,
                                    max(options.candidate_k, top_k))
        stored = await asyncio.to_thread(
            self._repository.get_faq_entries, [hit.chunk_id for hit in candidates]
        )
        # the facts decide: an entry deleted, retired at this version or out of scope is dropped
        found = {entry.id: entry for entry in stored if faq_visible(entry, search_filter)}
        live = [hit for hit in candidates if hit.chunk_id in found]
        ranked, reranked = await self._rerank(variants[0].text, live, found, options, rerank)
        final = ranked[:top_k]
        top_dense = best_dense(final[0], direct_only=True) if final else None
        threshold = (self._threshold if options.faq_direct_threshold is None
                     else options.faq_direct_threshold)
        direct = top_dense is not None and top_dense >= threshold
        hits = tuple(
            _to_faq_hit(rank, hit, found[hit.chunk_id], direct and rank == 1)
            for rank, hit in enumerate(final, start=1)
        )
        detail: dict[str, float | int | str] = {
            "entries": entries, "candidates": fused_count(lists),
            "not_in_facts": len(candidates) - len(live), "returned": len(hits),
            "threshold": threshold,
            "top_dense_score": "-" if top_dense is None else round(top_dense, 4),
            "direct_answer": int(direct), "variants": len(variants),
            "searched_variants": len(todo),
            "rerank": reranked.status,
        }
        if reranked.reason:
            degradations += (Degradation(code="faq_retrieval_failed",
                                         reason=f"faq rerank: {reranked.reason}"),)
        return FaqOutcome(hits, StageTrace(status="applied", detail=detail), degradations,
                          lists=tuple(lists), kept=len(live))

    async def _rerank(
        self, question: str, live: list[FusedHit], found: dict[str, FaqEntry], options: Options,
        wanted: bool,
    ) -> tuple[list[FusedHit], StageTrace]:
        """`live` in the reranker's order when rerank is on and configured; entries it did
        not score keep their fused order after the scored ones. A failure keeps the fused
        order (status failed, with its reason)."""
        if not wanted or self._reranker is None or not options.switches.rerank or len(live) < 2:
            return live, StageTrace(status="off")
        passages = [faq_index_text(found[hit.chunk_id]) for hit in live]
        try:
            scores = await asyncio.to_thread(self._reranker.rerank, question, passages)
        except Exception as exc:
            return live, StageTrace(status="failed", reason=f"{type(exc).__name__}: {exc}")
        by_index = {s.index: s.score for s in scores if 0 <= s.index < len(live)}
        order = sorted(range(len(live)),
                       key=lambda i: (i not in by_index, -by_index.get(i, 0.0), i))
        return [live[i] for i in order], StageTrace(status="applied")


def _variant_label(index: int, variant: QueryVariant) -> str:
    """The list label of a variant: `original` for the question itself (a probe's lists are
    named so), else its method and position."""
    return "original" if index == 0 and variant.method == "original" else (
        f"{variant.method}{index}")


def _to_faq_hit(rank: int, hit: FusedHit, entry: FaqEntry, direct: bool) -> FaqHit:
    dense_rank = hit.channel_rank("dense")
    dense_score = best_dense(hit)
    sparse_rank, sparse_score = hit.channel_hit("sparse") or (None, None)
    return FaqHit(
        rank=rank, faq_id=entry.id, question=entry.question, answer=entry.answer,
        source=entry.source, dense_rank=dense_rank, dense_score=dense_score,
        sparse_rank=sparse_rank, sparse_score=sparse_score,
        fusion_score=hit.fusion_score, retrieval_sources=hit.retrieval_sources,
        direct_answer=direct,
    )
