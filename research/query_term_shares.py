"""How common the query terms are: the share of a corpus's passages holding each term of each
query (analyzer v2, repeated tokens dropped), for the labelled sets' dev queries.

BM25 without pruning costs in proportion to the postings of the query terms, so this share
decides what a BM25 benchmark measures: hybrid_scale.py's synthetic texts put 35 % of query
terms in more than half of the chunks (research/bm25_common_terms_probe.py), which these sets
do not.

Usage: python research/query_term_shares.py [--evaldata ../shared/evaldata]
"""

from __future__ import annotations

import argparse
import collections
import statistics
from pathlib import Path

from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.evaluation.datasets import load_corpus, load_queries

SETS = ("kuake-qtr", "cmrc2018", "afqmc-faq", "scifact")
CUTS = (0.9, 0.5, 0.3, 0.1)


def shares(folder: Path) -> tuple[int, list[list[str]], list[float]]:
    """(passages, analysed queries, each query term's share of passages)."""
    df: collections.Counter[str] = collections.Counter()
    corpus = load_corpus(folder / "corpus.jsonl")
    for passage in corpus:
        df.update(set(analyze_v2(f"{passage.title} {passage.text}")))
    queries = [list(dict.fromkeys(analyze_v2(query.text)))
               for query in load_queries(folder / "queries.dev.jsonl")]
    return len(corpus), queries, [df[t] / len(corpus) for q in queries for t in q]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--evaldata", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "evaldata")
    args = parser.parse_args()
    print("| set | passages | queries | terms per query | "
          + " | ".join(f"terms in > {c:.0%}" for c in CUTS) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(CUTS))
    for name in SETS:
        passages, queries, found = shares(args.evaldata / name)
        cells = " | ".join(f"{sum(s > c for s in found) / len(found):.1%}" for c in CUTS)
        print(f"| {name} | {passages:,} | {len(queries)} | "
              f"{statistics.mean(map(len, queries)):.1f} | {cells} |")


if __name__ == "__main__":
    main()
