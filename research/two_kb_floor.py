"""The least a two-KB search can cost beside the larger KB's search (issue 36's 1.3x bound).

Reads a build of `benchmarks/metadata_filter_scale.py --dir DIR` (KB `a`: 100,352 rows, KB
`b`: 19,648). A two-KB search runs each KB's own channels (the issue: "each KB searched with
its own indexes"), so it costs at least a's search plus b's channels. Each variant runs in a
process of its own, where a's hybrid and the two-KB hybrid take turns per query (thread CPU,
channels one after the other, z-score fusion, lists merged as retrieval/multi_kb.py merges
them), and reports:

- the ratio of their mean CPU, and b's dense channel alone;
- recall@30 of b's dense list against b's exact top 30, and of the merged dense list (both
  KBs' lists merged by score) against the exact top 30 of both KBs' rows.

Variants: `exact` (as shipped: b is under the graph's 20,000 rows and is scanned exactly);
`graph E`: b gets its own graph (min_rows and exact_max_rows 10,000) searched at ef x
share^-E (the store's small-kb rule has E = 0.6; E = 0 searches b at the plain ef 192, the
cheapest walk that keeps b's recall at the larger KB's).

Usage: python research/two_kb_floor.py --dir DIR [--queries 300]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from dense_ann_data import queries_near
from metadata_filter_scale import DIMENSION, WEIGHTS, K, rendered_words, texts
from search_latency import build_vocabulary

from ragsift.adapters.embedded_index import EmbeddedIndex, dense_ann
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import RankedList
from ragsift.retrieval.fusion import zscore_fusion
from ragsift.retrieval.multi_kb import merge_kb_lists

VARIANTS = ("exact", "graph 0.6", "graph 0.3", "graph 0")


def variant(directory: Path, name: str, n: int) -> str:
    """One variant's line, measured in this process."""
    ann = None
    if name != "exact":
        dense_ann._KB_EF_EXPONENT = float(name.split()[1])
        ann = AnnSettings(min_rows=10_000, exact_max_rows=10_000)
    index = EmbeddedIndex(directory / "index", DIMENSION, ann=ann)
    index._dense.sync_ann()  # b's graph built before timing
    rng = np.random.default_rng(41)
    words, probs = build_vocabulary(np.random.default_rng(36))
    vectors = queries_near(np.load(directory / "centres.npy"), n, rng)
    queries = texts(rng, rendered_words(words), probs, [int(x) for x in rng.integers(3, 9, n)])

    def lists(kb: str, i: int) -> list[RankedList]:
        flt = SearchFilter(kb_id=kb)
        return [RankedList(name="dense:original",
                           hits=tuple(index.search_dense(vectors[i], flt, K))),
                RankedList(name="sparse:original",
                           hits=tuple(index.search_sparse(queries[i], flt, K)))]

    cases: dict[str, Callable[[int], object]] = {
        "a": lambda i: zscore_fusion(lists("a", i), WEIGHTS)[:K],
        "a + b": lambda i: zscore_fusion(
            merge_kb_lists([lists(kb, i) for kb in ("a", "b")], K), WEIGHTS)[:K],
        "b dense": lambda i: index.search_dense(vectors[i], SearchFilter(kb_id="b"), K),
    }
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for run in cases.values():
        run(0)
    for i in range(n):
        for case, run in cases.items():
            started = time.thread_time()
            run(i)
            cpu[case].append(time.thread_time() - started)
    mean = {case: statistics.mean(times) * 1e3 for case, times in cpu.items()}
    own, merged = _recalls(index, vectors[::3])
    index.close()
    return (f"| {name} | {mean['a']:.2f} | {mean['a + b']:.2f} | "
            f"**{mean['a + b'] / mean['a']:.2f}x** | {mean['b dense']:.2f} | {own:.4f} "
            f"| {merged:.4f} |")


def _recalls(index: EmbeddedIndex, vectors: np.ndarray) -> tuple[float, float]:
    """Mean recall@30 of b's dense list and of the merged dense list, against exact."""
    snap = index._dense._snapshot
    rows = {kb: snap.candidates(SearchFilter(kb_id=kb)).rows for kb in ("a", "b")}
    both = np.concatenate([rows["a"], rows["b"]])
    matrix = snap.matrix

    def exact(candidates: np.ndarray, query: np.ndarray) -> set[str]:
        top = candidates[np.argsort(-(np.asarray(matrix[candidates]) @ query))[:K]]
        return {snap.ids[int(r)] for r in top}

    own, merged = [], []
    for query in vectors:
        found = {kb: index.search_dense(query, SearchFilter(kb_id=kb), K) for kb in ("a", "b")}
        own.append(len(exact(rows["b"], query) & {h.chunk_id for h in found["b"]}) / K)
        lists = merge_kb_lists([[RankedList(name="dense:original", hits=tuple(found[kb]))]
                                for kb in ("a", "b")], K)
        merged.append(len(exact(both, query) & {h.chunk_id for h in lists[0].hits}) / K)
    return float(np.mean(own)), float(np.mean(merged))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # a worker's one variant
    args = parser.parse_args()
    if args.variant:
        print(variant(args.dir, args.variant, args.queries))
        return
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {Path('/proc/loadavg').read_text()[:14]}")
    print("| b's dense | a: CPU ms | a + b: CPU ms | a + b / a | b dense CPU ms "
          "| b dense R@30 | merged dense R@30 |\n|---|---:|---:|---:|---:|---:|---:|")
    for name in VARIANTS:
        done = subprocess.run([sys.executable, __file__, "--dir", str(args.dir), "--queries",
                               str(args.queries), "--variant", name],
                              check=True, capture_output=True, text=True)
        print(done.stdout.strip().splitlines()[-1], flush=True)
    print(f"load after: {Path('/proc/loadavg').read_text()[:14]}")


if __name__ == "__main__":
    main()
