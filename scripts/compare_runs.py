"""Paired comparison of TREC run files (`ragsift eval --dump-run`) on one qrels file.

Usage: python scripts/compare_runs.py QRELS BASELINE.run CANDIDATE.run [CANDIDATE.run ...]
Prints nDCG@10 of each run and, for each candidate, the mean per-query difference to the
baseline with its paired-bootstrap 95% interval, over the judged queries of the baseline run
(the qrels may judge queries that were not run; a query a candidate lacks scores 0 there).
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
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
