"""Paired comparison of TREC run files (`ragsift eval --dump-run`) on one qrels file.

Usage: python scripts/compare_runs.py QRELS BASELINE.run CANDIDATE.run [CANDIDATE.run ...]
       python scripts/compare_runs.py --pooled QRELS BASE.run CAND.run [QRELS BASE.run CAND.run]...
Prints nDCG@10 of each run and, for each candidate, the mean per-query difference to the
baseline with its paired-bootstrap 95% interval, over the judged queries of the baseline run
(the qrels may judge queries that were not run; a query a candidate lacks scores 0 there).
`--pooled` takes (qrels, baseline, candidate) triples of several sets and also resamples their
queries together: one interval for "the same change on every set" (each query weighs the same).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.datasets import read_qrels
from ragsift.evaluation.metrics import ndcg_at_k


def read_run(path: Path) -> dict[str, list[str]]:
    """Query id -> document ids in rank order (TREC columns: qid Q0 doc rank score tag)."""
    rows: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in path.read_text("utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 4:
            rows[parts[0]].append((int(parts[3]), parts[2]))
    return {qid: [doc for _, doc in sorted(ranked)] for qid, ranked in rows.items()}


def per_query_ndcg(run: dict[str, list[str]], qrels: dict[str, dict[str, int]],
                   queries: set[str], k: int) -> dict[str, float]:
    return {qid: ndcg_at_k(run.get(qid, []), qrels[qid], k) for qid in sorted(queries)}


def pooled(paths: list[Path], k: int) -> None:
    if len(paths) % 3:
        raise SystemExit("--pooled takes QRELS BASELINE CANDIDATE triples")
    base_all: dict[str, float] = {}
    cand_all: dict[str, float] = {}
    for i in range(0, len(paths), 3):
        qrels_path, base_path, cand_path = paths[i:i + 3]
        qrels = {qid: dict(docs) for qid, docs in read_qrels(qrels_path).items()}
        baseline = read_run(base_path)
        queries = set(baseline) & set(qrels)
        base = per_query_ndcg(baseline, qrels, queries, k)
        cand = per_query_ndcg(read_run(cand_path), qrels, queries, k)
        interval = paired_by_query(base, cand)
        print(f"{qrels_path.parent.name}: {len(queries)} queries, {base_path.name} "
              f"{sum(base.values()) / len(base):.4f} -> {cand_path.name} "
              f"{sum(cand.values()) / len(cand):.4f}, {interval.label()}")
        base_all.update({f"{i}:{q}": v for q, v in base.items()})
        cand_all.update({f"{i}:{q}": v for q, v in cand.items()})
    interval = paired_by_query(base_all, cand_all)
    print(f"pooled: {len(base_all)} queries, {interval.label()}, "
          f"better/worse {interval.better}/{interval.worse}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    if "--pooled" in sys.argv:
        pooled([Path(a) for a in sys.argv[1:] if a != "--pooled"], 10)
        return
    parser.add_argument("qrels", type=Path)
    parser.add_argument("baseline", type=Path)
    parser.add_argument("candidates", nargs="+", type=Path)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    qrels = {qid: dict(docs) for qid, docs in read_qrels(args.qrels).items()}
    baseline = read_run(args.baseline)
    queries = set(baseline) & set(qrels)
    base = per_query_ndcg(baseline, qrels, queries, args.k)
    print(f"{args.baseline.name}: {len(queries)} judged queries, "
          f"nDCG@{args.k} {sum(base.values()) / len(base):.4f}")
    for path in args.candidates:
        scores = per_query_ndcg(read_run(path), qrels, queries, args.k)
        interval = paired_by_query(base, scores)
        print(f"{path.name}: nDCG@{args.k} {sum(scores.values()) / len(scores):.4f}, "
              f"{interval.label()}, better/worse {interval.better}/{interval.worse}")


if __name__ == "__main__":
    main()
