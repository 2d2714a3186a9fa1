"""The FAQ's candidates over several query variants: each variant's channels fused on their
own, then merged by faq_id keeping the higher score (DESIGN: FAQ search over the variants).

A variant's dense and BM25 lists are fused like a one-variant search, so an entry scores what
the variant that found it best says; an entry found by several variants keeps the higher
fusion score, and the ranks and raw scores of every list that found it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragsift.domain.results import FusedHit, RankedList
from ragsift.retrieval.fusion import fuse


def _label(ranked: RankedList) -> str:
    return ranked.name.split(":", 1)[1] if ":" in ranked.name else ranked.name


def best_dense(hit: FusedHit, direct_only: bool = False) -> float | None:
    """The highest dense cosine any variant gave the entry; `direct_only`: of the variants
    that may make a direct answer - not a follow-up's contextual variant, whose earlier
    question's terms would match that question's entry and repeat its answer."""
    scores = [score for name, score in hit.scores.items() if name.startswith("dense:")
              and not (direct_only and name.startswith("dense:contextual"))]
    return max(scores) if scores else None


def _merged(kept: FusedHit, other: FusedHit) -> FusedHit:
    best, worse = (kept, other) if kept.fusion_score >= other.fusion_score else (other, kept)
    return best.model_copy(update={
        "best_rank": min(kept.best_rank, other.best_rank),
        "ranks": {**worse.ranks, **best.ranks}, "scores": {**worse.scores, **best.scores},
        "retrieval_sources": tuple(dict.fromkeys(best.retrieval_sources
                                                 + worse.retrieval_sources)),
    })


def merge_variants(
    method: str, lists: Sequence[RankedList], k: int, weights: Mapping[str, float],
    limit: int,
) -> list[FusedHit]:
    """Per variant (the label after `channel:`) its lists fused, then one hit per faq_id (the
    higher fusion score), best first; pure."""
    groups: dict[str, list[RankedList]] = {}
    for ranked in lists:
        groups.setdefault(_label(ranked), []).append(ranked)
    best: dict[str, FusedHit] = {}
    for group in groups.values():
        for hit in fuse(method, group, k=k, weights=weights):
            kept = best.get(hit.chunk_id)
            best[hit.chunk_id] = hit if kept is None else _merged(kept, hit)
    ordered = sorted(best.values(), key=lambda h: (-h.fusion_score, h.best_rank, h.chunk_id))
    return ordered[:limit]
