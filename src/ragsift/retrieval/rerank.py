"""Rerank as pure steps: which fused prefix to send, whether the answer is valid, new order."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragsift.domain.stages import RerankScore


def fitting_prefix(
    passage_tokens: Sequence[int], query_tokens: int, budget: int, margin: int
) -> int:
    """How many leading candidates fit: sum of (query + passage + margin) tokens <= budget.

    Candidates keep their fusion order; the prefix is never reordered or truncated inside.
    """
    used = 0
    for count, tokens in enumerate(passage_tokens):
        used += query_tokens + tokens + margin
        if used > budget:
            return count
    return len(passage_tokens)


def validate_scores(scores: Sequence[RerankScore], asked: int) -> list[RerankScore]:
    """The scores if usable; ValueError naming the defect otherwise."""
    if not scores:
        raise ValueError("the reranker returned no scores")
    if len(scores) > asked:
        raise ValueError(f"the reranker returned {len(scores)} scores for {asked} passages")
    indices = [score.index for score in scores]
    if any(index < 0 or index >= asked for index in indices):
        raise ValueError(f"the reranker returned an index outside 0..{asked - 1}")
    if len(set(indices)) != len(indices):
        raise ValueError("the reranker returned the same passage twice")
    # JSON Infinity / NaN parse as floats: +inf would jump to rank 1, NaN would fail min_score.
    bad = [score for score in scores if not math.isfinite(score.score)]
    if bad:
        raise ValueError(
            f"the reranker returned a non-finite score ({bad[0].score}) for passage {bad[0].index}"
        )
    return list(scores)


def rerank_order(candidates: int, scores: Sequence[RerankScore]) -> list[tuple[int, float | None]]:
    """(candidate index, rerank score) in the new order.

    Scored candidates come first by score (ties keep fusion order); candidates that were not
    sent or not scored follow in fusion order with no rerank score.
    """
    scored = sorted(scores, key=lambda s: (-s.score, s.index))
    seen = {s.index for s in scored}
    order: list[tuple[int, float | None]] = [(s.index, s.score) for s in scored]
    order += [(index, None) for index in range(candidates) if index not in seen]
    return order
