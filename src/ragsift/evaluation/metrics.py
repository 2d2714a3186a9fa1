"""Pure ranking metrics over one query, and their per-query/mean aggregation, equal to trec_eval."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

# Conventions (each one checked against pytrec_eval in tests/evaluation/test_metrics.py):
# - `ranked` is already in rank order and is never re-sorted, so ties keep the caller's order.
#   trec_eval instead re-sorts by score and breaks ties by doc id, descending; feed it strictly
#   decreasing scores (e.g. 1000 - rank) to compare.
# - A doc that occurs twice in `ranked` counts once, at its first occurrence: later copies are
#   dropped and the docs after them move up (what trec_eval sees for that run keyed by doc id).
# - `relevant` maps doc id -> grade; a doc is relevant iff grade > 0 (trec_eval's default
#   relevance level 1). Grades <= 0 and unjudged docs gain 0, in nDCG too.
# - A query with no relevant doc scores 0.0 on every metric, as trec_eval scores it; it is
#   `evaluate_run` that leaves such queries out of the aggregate.

METRICS: tuple[str, ...] = ("precision", "recall", "mrr", "ndcg")
DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 100)


def _top_k(ranked: Sequence[str], k: int) -> list[str]:
    """The first k distinct doc ids of `ranked`, each at its first occurrence."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    top: dict[str, None] = {}
    for doc_id in ranked:
        if len(top) == k:
            break
        top.setdefault(doc_id, None)
    return list(top)


def _grade(relevant: Mapping[str, int], doc_id: str) -> int:
    """The doc's grade clipped at 0: unjudged and non-relevant docs gain nothing."""
    return max(relevant.get(doc_id, 0), 0)


def _num_relevant(relevant: Mapping[str, int]) -> int:
    """|R|, the number of docs with a grade > 0."""
    return sum(1 for grade in relevant.values() if grade > 0)


def _hits(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> int:
    """|top_k ∩ R|, the relevant docs among the first k distinct ones."""
    return sum(1 for doc_id in _top_k(ranked, k) if _grade(relevant, doc_id) > 0)


def precision_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """P@k = |top_k ∩ R| / k, over k even when fewer than k docs are ranked (trec_eval P_k)."""
    return _hits(ranked, relevant, k) / k


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """R@k = |top_k ∩ R| / |R|, 0.0 when |R| = 0 (trec_eval recall_k)."""
    num_relevant = _num_relevant(relevant)
    return _hits(ranked, relevant, k) / num_relevant if num_relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """RR@k = 1 / rank of the first relevant doc in top_k, else 0.0 (recip_rank of run[:k])."""
    for rank, doc_id in enumerate(_top_k(ranked, k), start=1):
        if _grade(relevant, doc_id) > 0:
            return 1.0 / rank
    return 0.0


def _dcg(gains: Sequence[int]) -> float:
    """DCG = Σ_i g_i / log2(i + 1), with ranks i from 1."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1) if gain)


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG@k = DCG(top_k grades) / DCG(k best grades of R), 0.0 if R = ∅ (trec_eval ndcg_cut_k)."""
    gains = [_grade(relevant, doc_id) for doc_id in _top_k(ranked, k)]
    ideal = _dcg(sorted((g for g in relevant.values() if g > 0), reverse=True)[:k])
    return _dcg(gains) / ideal if ideal else 0.0


_FUNCTIONS = {
    "precision": precision_at_k,
    "recall": recall_at_k,
    "mrr": mrr_at_k,
    "ndcg": ndcg_at_k,
}


def evaluate_run(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, dict[str, float]]:
    """{query: {"<metric>@<k>": value}} for the queries of `qrels` that have a relevant doc."""
    # Which queries are scored:
    # - only those of `qrels` with at least one grade > 0. A query of `run` absent from `qrels` is
    #   skipped, as in trec_eval; one judged but with no relevant doc is skipped too, whereas
    #   trec_eval scores it 0 everywhere: nothing is attainable for it, it would only drag means.
    # - a scored query missing from `run` counts as all zeros (trec_eval -c; pytrec_eval and plain
    #   trec_eval would drop it), so a system that answers nothing is not rewarded.
    per_query: dict[str, dict[str, float]] = {}
    for query_id, relevant in qrels.items():
        if _num_relevant(relevant) == 0:
            continue
        ranked = run.get(query_id, ())
        per_query[query_id] = {
            f"{name}@{k}": _FUNCTIONS[name](ranked, relevant, k) for name in METRICS for k in ks
        }
    return per_query


def mean_metrics(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """{metric: Σ_q value_q / |queries with that metric|}; {} when there is no query."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for metrics in per_query.values():
        for name, value in metrics.items():
            totals[name] = totals.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: totals[name] / counts[name] for name in totals}
