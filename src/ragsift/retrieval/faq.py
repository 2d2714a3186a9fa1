"""FaqSearcher: the FAQ collection searched like the documents (channels, fusion), kept apart.

The FAQ index holds one record per entry: its dense vector embeds the QUESTION only (a user's
query is compared with the curated question, which keeps the cosine calibrated for the
direct-answer threshold), while BM25 indexes question AND answer (so a query naming a term that
only the answer contains, an error code say, still finds the entry).

FAQ search differs from document search on purpose: it runs on the original query only (no
rewrite, no rerank, no minimum score, no context expansion), and the document whitelist does not
apply to it. The data scope does: an entry carries source, tenant, dataset, visibility, allowed
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
from dataclasses import dataclass

from ragsift.domain.faq import FaqEntry, faq_visible
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import FaqHit, FusedHit
from ragsift.domain.trace import Degradation, StageTrace
from ragsift.ports import Embedder, Repository, SearchIndex
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.fusion import fuse, fused_count
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
    """FAQ hits with the stage's trace, its degradations and how long it took."""

    hits: tuple[FaqHit, ...]
    trace: StageTrace
    degradations: tuple[Degradation, ...] = ()
    latency_ms: float | None = None


def _failed(reason: str, degradations: tuple[Degradation, ...] = ()) -> FaqOutcome:
    logger.warning("FAQ search failed: %s", reason)
    if not degradations:
        degradations = (Degradation(code="faq_retrieval_failed", reason=reason),)
    return FaqOutcome((), StageTrace(status="failed", reason=reason), degradations)


class FaqSearcher:
    """Dense + BM25 over the FAQ index, the request's fusion, a facts check, a direct answer.

    The top hit is a direct answer when the dense cosine between the query and its question
    is at least `direct_answer_threshold` (Settings.faq_direct_answer_threshold).
    """

    def __init__(
        self, repository: Repository, index: SearchIndex, embedder: Embedder,
        direct_answer_threshold: float,
    ) -> None:
        self._repository = repository
        self._channels = ChannelRunner(index, embedder)
        self._threshold = direct_answer_threshold

    async def search(
        self, search_filter: SearchFilter, query: str, options: Options, top_k: int
    ) -> FaqOutcome:
        """The FAQ entries within `search_filter` (KB, scope, version; its document whitelist
        is ignored). Never raises but on cancellation: a failure becomes a failed stage and a
        degradation."""
        started = time.perf_counter()
        scoped = search_filter.model_copy(update={"document_ids": None})
        try:
            outcome = await self._search(scoped, query, options, top_k)
        except Exception as exc:
            outcome = _failed(f"{type(exc).__name__}: {exc}")
        latency = round((time.perf_counter() - started) * 1000, 3)
        return FaqOutcome(outcome.hits, outcome.trace, outcome.degradations, latency)

    async def _search(
        self, search_filter: SearchFilter, query: str, options: Options, top_k: int
    ) -> FaqOutcome:
        kb_id = search_filter.kb_id
        entries = await asyncio.to_thread(
            self._repository.count_faq_entries, kb_id, search_filter.version_seq)
        if not entries:
            return FaqOutcome((), StageTrace(status="skipped", reason="no FAQ entries in the KB"))
        channels = await self._channels.run(
            [("original", query)], search_filter, options.mode, max(options.channel_k, top_k),
        )
        degradations = tuple(
            Degradation(code="faq_retrieval_failed", reason=f"faq {d.reason}")
            for d in channels.degradations
        )
        if not channels.lists:
            return _failed("; ".join(d.reason for d in degradations), degradations)
        candidates = fuse(options.fusion, channels.lists, k=options.rrf_k,
                          weights=options.weights, limit=max(options.candidate_k, top_k))
        stored = await asyncio.to_thread(
            self._repository.get_faq_entries, [hit.chunk_id for hit in candidates]
        )
        # the facts decide: an entry deleted, retired at this version or out of scope is dropped
        found = {entry.id: entry for entry in stored if faq_visible(entry, search_filter)}
        live = [hit for hit in candidates if hit.chunk_id in found]
        final = live[:top_k]
        top_dense = final[0].channel_score("dense") if final else None
        direct = top_dense is not None and top_dense >= self._threshold
        hits = tuple(
            _to_faq_hit(rank, hit, found[hit.chunk_id], direct and rank == 1)
            for rank, hit in enumerate(final, start=1)
        )
        detail: dict[str, float | int | str] = {
            "entries": entries, "candidates": fused_count(channels.lists),
            "not_in_facts": len(candidates) - len(live), "returned": len(hits),
            "threshold": self._threshold,
            "top_dense_score": "-" if top_dense is None else round(top_dense, 4),
            "direct_answer": int(direct),
        }
        return FaqOutcome(hits, StageTrace(status="applied", detail=detail), degradations)


def _to_faq_hit(rank: int, hit: FusedHit, entry: FaqEntry, direct: bool) -> FaqHit:
    dense_rank, dense_score = hit.channel_hit("dense") or (None, None)
    sparse_rank, sparse_score = hit.channel_hit("sparse") or (None, None)
    return FaqHit(
        rank=rank, faq_id=entry.id, question=entry.question, answer=entry.answer,
        source=entry.source, dense_rank=dense_rank, dense_score=dense_score,
        sparse_rank=sparse_rank, sparse_score=sparse_score,
        fusion_score=hit.fusion_score, retrieval_sources=hit.retrieval_sources,
        direct_answer=direct,
    )
