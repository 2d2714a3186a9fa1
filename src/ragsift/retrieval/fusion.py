"""Fusion of ranked lists: weighted Reciprocal Rank Fusion and score-normalised convex fusion.

All are pure: they deduplicate by chunk id, order by fused score, then by the best single
rank, then by chunk id, and record which lists found each chunk. Raw cosine and BM25 scores
are never added together: convex fusion normalises each list first (min-max or z-score).

A list shorter than the depth its channel was asked for (`depth`) ran out of matches: BM25
scores every chunk it does not return 0. Normalised on its few hits alone, such a list loses
its meaning (one hit, or equal scores, has no spread), so a channel named in `floors` is
normalised as if padded to `depth` with its floor score: the only exact match of a rare term
then stands far above the chunks BM25 scores 0 instead of at a fixed 1 (issue 34).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from ragsift.domain.results import FusedHit, RankedList
from ragsift.domain.trusted import TrustedBuilder

_fused_hit = TrustedBuilder(FusedHit)
# fused score descending, then the best single rank, then the chunk id
_ORDER = itemgetter(0, 1, 2)


def _collect(
    lists: Sequence[RankedList],
) -> dict[str, tuple[str, dict[str, int], dict[str, float]]]:
    """chunk id -> (document id, rank per list, raw score per list); ranks start at 1."""
    seen: dict[str, tuple[str, dict[str, int], dict[str, float]]] = {}
    for ranked in lists:
        for position, hit in enumerate(ranked.hits, start=1):
            entry = seen.get(hit.chunk_id)
            if entry is None:
                entry = seen[hit.chunk_id] = (hit.document_id, {}, {})
            _, ranks, scores = entry
            if ranked.name not in ranks:  # a list naming a chunk twice keeps its first rank
                ranks[ranked.name] = position
                scores[ranked.name] = hit.score
    return seen


def fused_count(lists: Sequence[RankedList]) -> int:
    """How many distinct chunks fusing `lists` ranks (what a `limit` leaves out included)."""
    return len({hit.chunk_id for ranked in lists for hit in ranked.hits})


def _ordered(
    lists: Sequence[RankedList], fused: Mapping[str, float], limit: int | None = None
) -> list[FusedHit]:
    collected = _collect(lists)
    rows = [
        (-fused[chunk], min(ranks.values()), chunk, document_id, ranks, scores)
        for chunk, (document_id, ranks, scores) in collected.items()
    ]
    rows.sort(key=_ORDER)
    if limit is not None:
        rows = rows[: max(0, limit)]  # ordering is cheap, a hit model is not
    # the values are this module's own, from validated lists: no per-hit validation
    return [
        _fused_hit({
            "chunk_id": chunk, "document_id": document_id, "fusion_score": -negative,
            "best_rank": best, "ranks": ranks, "scores": scores,
            # ranks are filled list by list: their names are in list order, each once
            "retrieval_sources": tuple(ranks),
        })
        for negative, best, chunk, document_id, ranks, scores in rows
    ]


def _weight(weights: Mapping[str, float] | None, name: str) -> float:
    """A list's weight: by full name (`dense:original`), else by channel (`dense`), else 1."""
    if weights is None:
        return 1.0
    if name in weights:
        return weights[name]
    return weights.get(name.split(":", 1)[0], 1.0)


def rrf(
    lists: Sequence[RankedList],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[FusedHit]:
    """RRF(d) = sum over lists of w_i / (k + rank_i(d)), ranks from 1.

    With one non-empty list the channel's raw score is kept as the fusion score, so a
    single-channel search reports cosine or BM25 rather than a rank transform.
    """
    if k < 1:
        raise ValueError("rrf k must be >= 1")
    live = [ranked for ranked in lists if ranked.hits]
    if len(live) == 1:
        only = live[0]
        raw: dict[str, float] = {}
        for hit in only.hits:
            raw.setdefault(hit.chunk_id, hit.score)
        return _ordered(live, raw, limit)
    fused: dict[str, float] = {}
    for ranked in live:
        weight = _weight(weights, ranked.name)
        seen: set[str] = set()
        for position, hit in enumerate(ranked.hits, start=1):
            if hit.chunk_id in seen:
                continue
            seen.add(hit.chunk_id)
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight / (k + position)
    return _ordered(live, fused, limit)


def weighted_fusion(
    lists: Sequence[RankedList],
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
    depth: int | None = None,
    floors: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Convex fusion of min-max normalised scores: sum of w_i * (s - min_i) / (max_i - min_i).

    Each list is normalised on its own returned candidates, so the best hit of a list scores 1
    and its last 0; a list whose scores are all equal gives each hit 1. A chunk missing from
    a list gets 0 from it. With one non-empty list the raw score is kept, as in `rrf`.
    """
    live = [ranked for ranked in lists if ranked.hits]
    if len(live) == 1:
        return rrf(live, limit=limit)
    fused: dict[str, float] = {}
    for ranked in live:
        weight = _weight(weights, ranked.name)
        scores = [hit.score for hit in ranked.hits]
        low, high = min(scores), max(scores)
        padded = _floor(ranked, depth, floors)
        if padded is not None:
            low = min(low, padded[0])
        seen: set[str] = set()
        for hit in ranked.hits:
            if hit.chunk_id in seen:
                continue
            seen.add(hit.chunk_id)
            norm = 1.0 if high == low else (hit.score - low) / (high - low)
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight * norm
    return _ordered(live, fused, limit)


def _floor(
    ranked: RankedList, depth: int | None, floors: Mapping[str, float] | None
) -> tuple[float, int] | None:
    """(floor score, padding hits) for a list shorter than `depth` whose channel has a floor
    (by full name or channel, as weights); None when its statistics stand as they are."""
    if depth is None or floors is None:
        return None
    floor = floors.get(ranked.name, floors.get(ranked.name.split(":", 1)[0]))
    if floor is None:
        return None
    padding = depth - len({hit.chunk_id for hit in ranked.hits})
    return (floor, padding) if padding > 0 else None


def _first_scores(ranked: RankedList) -> dict[str, float]:
    first: dict[str, float] = {}
    for hit in ranked.hits:
        first.setdefault(hit.chunk_id, hit.score)
    return first


def zscore_fusion(
    lists: Sequence[RankedList],
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
    depth: int | None = None,
    floors: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Convex fusion of z-score normalised scores: sum of w_i * (s - mean_i) / std_i.

    Mean and (population) standard deviation are those of each list's returned candidates,
    so a list's spread, not only its extremes, sets the scale: a cosine list whose scores
    crowd near its best counts less than min-max makes it. A chunk missing from a list gets
    that list's lowest z-score (as if last). A list whose scores are all equal (one hit, say)
    has no spread to scale by: its hits get 1 and the chunks it misses 0, as in min-max, so
    finding a chunk still counts. With one non-empty list the raw score is kept, as in `rrf`.

    A list of a channel in `floors` with fewer than `depth` hits takes its mean and spread over
    its hits and `depth - n` hits at the floor score, and the chunks it misses score the
    floor's z: one hit of n = depth gets sqrt(depth - 1), whatever its raw score.
    """
    live = [ranked for ranked in lists if ranked.hits]
    if len(live) == 1:
        return rrf(live, limit=limit)
    per_list: list[tuple[float, dict[str, float], float]] = []  # weight, z, missing
    for ranked in live:
        first = _first_scores(ranked)
        values = list(first.values())
        floor, padding = _floor(ranked, depth, floors) or (0.0, 0)
        count = len(values) + padding
        mean = (math.fsum(values) + padding * floor) / count
        spread = math.sqrt(
            (math.fsum((v - mean) ** 2 for v in values) + padding * (floor - mean) ** 2) / count
        )
        if spread == 0:
            per_list.append((_weight(weights, ranked.name), dict.fromkeys(first, 1.0), 0.0))
            continue
        z = {chunk: (v - mean) / spread for chunk, v in first.items()}
        missing = (floor - mean) / spread if padding else min(z.values())
        per_list.append((_weight(weights, ranked.name), z, missing))
    return _ordered(live, _summed(per_list), limit)


def _summed(per_list: Sequence[tuple[float, dict[str, float], float]]) -> dict[str, float]:
    """chunk -> sum over lists of weight * z (a list's `missing` z where it lacks the chunk)."""
    chunks = {chunk for _, z, _ in per_list for chunk in z}
    if len(per_list) == 2:
        # the usual hybrid, on every search: two floats' sum is rounded once, so `a + b` is
        # what fsum returns for them, without its per-chunk generator (~0.1 ms a query)
        (w1, z1, m1), (w2, z2, m2) = per_list
        return {chunk: w1 * z1.get(chunk, m1) + w2 * z2.get(chunk, m2) for chunk in chunks}
    return {
        chunk: math.fsum(w * z.get(chunk, missing) for w, z, missing in per_list)
        for chunk in chunks
    }


@dataclass(frozen=True, slots=True)
class Padding:
    """Short lists of the channels in `floors` are normalised as if `depth` long (see the
    module docstring); RRF, which fuses ranks, ignores it."""

    depth: int
    floors: Mapping[str, float]


def padded_lists(lists: Sequence[RankedList], padding: Padding) -> dict[str, int]:
    """List name -> its hits, for each list `padding` pads (for the trace)."""
    return {ranked.name: len(ranked.hits) for ranked in lists
            if ranked.hits and _floor(ranked, padding.depth, padding.floors) is not None}


Fusion = Callable[
    [Sequence[RankedList], int, Mapping[str, float] | None, int | None, Padding | None],
    list[FusedHit],
]


def _padded(
    method: Callable[..., list[FusedHit]],
) -> Fusion:
    def run(lists: Sequence[RankedList], _k: int, weights: Mapping[str, float] | None,
            limit: int | None, padding: Padding | None) -> list[FusedHit]:
        if padding is None:
            return method(lists, weights, limit)
        return method(lists, weights, limit, padding.depth, padding.floors)
    return run


FUSIONS: dict[str, Fusion] = {
    "rrf": lambda lists, k, weights, limit, _padding: rrf(
        lists, k=k, weights=weights, limit=limit),
    "weighted": _padded(weighted_fusion),
    "zscore": _padded(zscore_fusion),
}


def fuse(
    method: str, lists: Sequence[RankedList], k: int = 60,
    weights: Mapping[str, float] | None = None, limit: int | None = None,
    padding: Padding | None = None,
) -> list[FusedHit]:
    """Fuse `lists` with `method` (rrf | weighted | zscore); k only matters to rrf, `padding`
    to the score fusions. With `limit`, only the first `limit` hits of the fused order
    (`fused_count` counts them all)."""
    try:
        fusion = FUSIONS[method]
    except KeyError:
        raise ValueError(f"unknown fusion {method!r}; use one of {', '.join(FUSIONS)}") from None
    return fusion(lists, k, weights, limit, padding)
