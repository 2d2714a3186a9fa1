"""One search over several knowledge bases: each KB is searched with its own indexes (its
scope, its version, its channels), then each channel's lists are merged across the KBs into
one list per name, and the rest of the pipeline (fusion, rerank, threshold, Small2Big) runs
once on the merged lists, as for one KB.

Merging per channel, before fusion, keeps fusion as it is calibrated: a single-KB search's
list names, one list per (channel, variant), each at most `channel_k` long. Feeding every
KB's lists into fusion as separate lists instead would rank each KB's best hit alike under
RRF (rank 1 in its own list), whatever it scores: an unrelated KB would share the top.

- dense (and second dense) lists merge by cosine: the KBs share the embedding model (checked:
  `check_models`), so their cosines are on one scale;
- BM25 lists merge by raw score. Scores differ between KBs only through idf and the average
  length, and BM25's idf depends on the share of chunks holding a term, not on the KB's size,
  so KBs of one language give close scores; raw scores also keep BM25's floor (0: no term
  matched) that fusion pads short lists with. Z-normalising per KB (the alternative,
  `sparse="zscore"`) lifts an unrelated KB's best match to the level of the related KB's best
  (the closed-form case in tests/retrieval/test_multi_kb.py); on the small two-KB set of
  benchmarks/multi_kb_quality.py both merges rank every answer first (docs/quality.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ragsift.domain.errors import EmbeddingModelMismatch, InvalidInput, NotFound
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.results import ChannelHit, RankedList, RetrievalHit
from ragsift.domain.trace import ChannelRun, Degradation, KbSearchTrace
from ragsift.retrieval.exact_match import Lookup

if TYPE_CHECKING:
    from ragsift.retrieval.channel_stage import Retrieved
    from ragsift.retrieval.document_stages import ScopeOutcome
    from ragsift.retrieval.feedback_stage import FeedbackOutcome
    from ragsift.retrieval.options import Options

SparseMerge = Literal["raw", "zscore"]


@dataclass(frozen=True, slots=True)
class KbTarget:
    """One KB of a search and the version it is searched at (None: no versions)."""

    kb_id: str
    version: int | None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class KbPart:
    """One KB's part of a search, up to its channel lists (after RM3 feedback); no lists
    when its scope left nothing to search."""

    target: KbTarget
    scope: ScopeOutcome
    timings: Mapping[str, float]
    options: Options  # with this KB's second dense weight
    retrieved: Retrieved | None = None
    feedback: FeedbackOutcome | None = None
    lookup: Lookup | None = None

    @property
    def lists(self) -> tuple[RankedList, ...] | None:
        return None if self.feedback is None else self.feedback.lists

    @property
    def runs(self) -> tuple[ChannelRun, ...]:
        return () if self.retrieved is None else self.retrieved.runs

    @property
    def degradations(self) -> tuple[Degradation, ...]:
        found = () if self.retrieved is None else self.retrieved.degradations
        extra = () if self.feedback is None or self.feedback.degradation is None else (
            self.feedback.degradation,)
        # the exact-match look-up's own is the lane's (ExactMatchOutcome), not counted here
        return (*found, *extra)


def merged_timings(timings: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The KBs' stage timings as one: they ran side by side, so each stage's longest."""
    merged: dict[str, float] = {}
    for part in timings:
        for name, ms in part.items():
            merged[name] = max(ms, merged.get(name, 0.0))
    return merged


def kb_traces(parts: Sequence[KbPart], hits: Sequence[RetrievalHit]) -> tuple[KbSearchTrace, ...]:
    """Each KB's part of the trace, with how many of the returned hits it gave."""
    return tuple(KbSearchTrace(
        kb_id=part.target.kb_id, kb_name=part.target.name, kb_version=part.target.version,
        scope=part.scope.decision.trace, channels=part.runs,
        returned_count=sum(1 for hit in hits if hit.kb_id == part.target.kb_id),
    ) for part in parts)


def unique_kbs(kb_ids: Sequence[str], limit: int) -> tuple[str, ...]:
    """The request's KBs, deduplicated in order; InvalidInput past `limit` or when empty."""
    unique = tuple(dict.fromkeys(kb_ids))
    if not unique:
        raise InvalidInput("kbs must name at least one knowledge base")
    if len(unique) > limit:
        raise InvalidInput(
            f"at most {limit} knowledge bases per request (RAGSIFT_SEARCH_MAX_KBS), "
            f"got {len(unique)}")
    return unique


def check_models(kbs: Sequence[KnowledgeBase | None], kb_ids: Sequence[str],
                 model: str, sparse_only: bool) -> None:
    """NotFound for an unknown KB; InvalidInput (400, exit 2) when the KBs were built with
    different embedding models, EmbeddingModelMismatch (409, as for one KB) when they share
    another model than the embedder's; neither for a BM25-only search. Cosines of two
    models are not one scale, so their lists cannot be merged."""
    for kb, kb_id in zip(kbs, kb_ids, strict=True):
        if kb is None:
            raise NotFound(f"knowledge base {kb_id!r} does not exist")
    known = [kb for kb in kbs if kb is not None]
    if sparse_only:
        return
    models = {kb.embedding_model for kb in known}
    if len(models) > 1:
        named = ", ".join(f"{kb.name!r}: {kb.embedding_model}" for kb in known)
        raise InvalidInput(
            f"these knowledge bases were built with different embedding models ({named}): "
            "their dense scores cannot be ranked together. Search them in mode sparse "
            "(BM25 needs no embedding), or one at a time.")
    for kb in known:
        if kb.embedding_model != model:
            raise EmbeddingModelMismatch(
                f"knowledge base {kb.name!r} was built with the embedding model "
                f"{kb.embedding_model}, but the configured embedder is {model}: their vectors "
                "cannot be compared. Search in mode sparse, or re-ingest the KB.")


def _zscored(hits: Sequence[ChannelHit]) -> list[ChannelHit]:
    scores = [hit.score for hit in hits]
    mean = math.fsum(scores) / len(scores)
    spread = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    return [hit.model_copy(update={"score": 1.0 if spread == 0 else (hit.score - mean) / spread})
            for hit in hits]


def merge_kb_lists(
    per_kb: Sequence[Sequence[RankedList]], depth: int, sparse: SparseMerge = "raw",
) -> tuple[RankedList, ...]:
    """Each list name's hits from every KB in one list ordered by score (see the module doc),
    cut to `depth` (the channel_k every KB was searched with). Names keep their first order;
    a single KB's lists come back as they are. Ties keep the KBs' order."""
    if len(per_kb) == 1:
        return tuple(per_kb[0])
    names: dict[str, list[ChannelHit]] = {}
    for lists in per_kb:
        for ranked in lists:
            hits = list(ranked.hits)
            if hits and sparse == "zscore" and ranked.name.startswith("sparse"):
                hits = _zscored(hits)
            names.setdefault(ranked.name, []).extend(hits)
    return tuple(
        RankedList(name=name, hits=tuple(sorted(hits, key=lambda h: -h.score)[:depth]))
        for name, hits in names.items()
    )


def merge_lookups(lookups: Sequence[Lookup]) -> Lookup:
    """The exact-match lane's look-ups of every KB as one: a failed or skipped KB's says why
    (the first such); otherwise the rare terms of every KB and every holder (chunk ids are
    unique across KBs)."""
    if len(lookups) == 1:
        return lookups[0]
    for lookup in lookups:
        if lookup.trace is not None and lookup.trace.status == "failed":
            return lookup
    live = [lookup for lookup in lookups if lookup.trace is None]
    if not live:
        return lookups[0]
    held: dict[str, int] = {}
    for lookup in live:
        held.update(lookup.held)
    terms = tuple(dict.fromkeys(t for lookup in live for t in lookup.terms))
    return Lookup(terms, held, max(lookup.latency_ms for lookup in live))


def hit_kbs(per_kb: Sequence[tuple[str, Sequence[RankedList]]]) -> dict[str, str]:
    """chunk id -> the KB whose lists found it."""
    found: dict[str, str] = {}
    for kb_id, lists in per_kb:
        for ranked in lists:
            for hit in ranked.hits:
                found.setdefault(hit.chunk_id, kb_id)
    return found
