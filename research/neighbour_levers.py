"""Offline measurement of candidate-graph smoothing (issue 18): the cluster hypothesis on the
fused candidates. Each of the default's top M candidates takes a share of the fused scores
of its most similar fellow candidates (e5 passage cosine), so a candidate that the other
strong candidates resemble rises, one that stands alone sinks.

    python research/neighbour_levers.py [--cache /tmp/levers] [--evalkb DIR] SET [SET ...]

Data as in rescoring_levers.py (e5 vectors from the eval build's embedding cache, exact
BM25 over the v2 analyzer, z-score fusion dense 1 / BM25 0.7 at 100 per channel). Scores
per configuration: nDCG@10, the paired-bootstrap 95% CI of the difference to the default,
queries helped / hurt.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rescoring_levers import fused, load, ndcg, set_arguments

from ragsift.evaluation.bootstrap_ci import paired_by_query


def smoothed(ranked: list[tuple[int, float]], vectors: np.ndarray, top_m: int, k: int,
             alpha: float, floor: float) -> list[int]:
    """The top M re-scored: (1 - alpha) * own + alpha * similarity-weighted mean of its k
    most similar candidates' scores, scores min-max scaled over the M first."""
    head = ranked[:top_m]
    rows = np.array([r for r, _ in head])
    scores = np.array([s for _, s in head], dtype=np.float64)
    span = scores.max() - scores.min()
    scaled = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
    sims = vectors[rows] @ vectors[rows].T
    np.fill_diagonal(sims, -np.inf)
    nearest = np.argsort(-sims, axis=1)[:, :k]
    weight = np.maximum(np.take_along_axis(sims, nearest, axis=1) - floor, 0.0)
    mass = weight.sum(axis=1)
    support = np.where(mass > 0, (weight * scaled[nearest]).sum(axis=1) / np.maximum(mass, 1e-9),
                       0.0)
    new = (1 - alpha) * scaled + alpha * support
    order = np.argsort(-new, kind="stable")
    return [int(rows[i]) for i in order] + [r for r, _ in ranked[top_m:]]


def main() -> None:
    args = set_arguments(argparse.ArgumentParser(description=__doc__)).parse_args()
    grid = list(itertools.product((20, 50), (3, 8), (0.1, 0.2, 0.35), (0.0, 0.8)))
    print("| set | M / k / alpha / floor | nDCG@10 | delta [95% CI] | helped/hurt |")
    print("|---|---|---|---|---|")
    for name in args.sets:
        s = load(args.root, args.cache, args.evalkb, name)
        assert s.vectors is not None
        lists = {qid: fused(s.dense(s.qvecs[qid]), s.sparse(text)) for qid, text in s.queries}
        base = {qid: ndcg(s, qid, [r for r, _ in ranked]) for qid, ranked in lists.items()}
        print(f"| {name} | default | {np.mean(list(base.values())):.4f} | - | - |", flush=True)
        for top_m, k, alpha, floor in grid:
            run = {qid: ndcg(s, qid, smoothed(ranked, s.vectors, top_m, k, alpha, floor))
                   for qid, ranked in lists.items()}
            ci = paired_by_query(base, run)
            print(f"| {name} | {top_m} / {k} / {alpha} / {floor} | "
                  f"{np.mean(list(run.values())):.4f} | {ci.label()} | {ci.better}/{ci.worse} |",
                  flush=True)


if __name__ == "__main__":
    main()
