"""Where a hybrid search's time goes beyond its slower channel (issue 39 item 3, 100k ratio).

Reopens an index hybrid_scale.py kept (--keep) and times, per query of its queries.json, the
parts of the sparse channel (analysis, tantivy's search, stored-document reads), the dense
channel, both channels on two threads without the fusion, the fusion alone, and the cost of a
thread hand-off with nothing in it. p50 in ms, KB `big` (90 % of the rows, unfiltered case).

Usage: python research/hybrid_overhead_probe.py /tmp/hr100k [--queries 200] [--baseline REV]

With --baseline, the fusion (retrieval/fusion.py and the domain's TrustedBuilder) of git
revision REV is loaded beside this tree's, and the hybrid arrangements are timed with both,
interleaved per query.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from dense_ann_data import queries_near

from ragsift.adapters.embedded_index.bm25_schema import bm25_query
from ragsift.adapters.embedded_index.index import EmbeddedIndex
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.retrieval.fusion import zscore_fusion

K = 30
ROOT = Path(__file__).resolve().parents[1]
Fuse = Callable[[list[ChannelHit], list[ChannelHit]], None]


def fusion_of(zscore: Callable[..., object]) -> Fuse:
    def fuse(dense: list[ChannelHit], sparse: list[ChannelHit]) -> None:
        """The default z-score fusion of the two lists (BM25 weighted 0.7)."""
        zscore([RankedList(name="dense:original", hits=tuple(dense)),
                RankedList(name="sparse:original", hits=tuple(sparse))],
               {"dense:original": 1.0, "sparse:original": 0.7})
    return fuse


fuse = fusion_of(zscore_fusion)


def fusion_at(revision: str) -> Fuse:
    """`revision`'s zscore_fusion, its TrustedBuilder included, loaded as private modules."""
    def source(path: str) -> str:
        return subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout

    trusted = types.ModuleType("_baseline_trusted")
    exec(compile(source("src/ragsift/domain/trusted.py"), "trusted", "exec"), trusted.__dict__)
    sys.modules["_baseline_trusted"] = trusted
    fusion = sys.modules["_baseline_fusion"] = types.ModuleType("_baseline_fusion")
    code = source("src/ragsift/retrieval/fusion.py").replace(
        "from ragsift.domain.trusted import", "from _baseline_trusted import")
    exec(compile(code, "fusion", "exec"), fusion.__dict__)
    return fusion_of(fusion.zscore_fusion)


def p50(run: Callable[[int], object], n: int) -> float:
    for i in range(min(10, n)):
        run(i)
    times = []
    for i in range(n):
        started = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--baseline", help="a git revision whose fusion is timed beside")
    args = parser.parse_args()
    index = EmbeddedIndex(args.directory / "index", 384)
    rng = np.random.default_rng(7)
    real = json.loads((args.directory / "queries.json").read_text("utf-8"))
    n = args.queries
    texts = [real[int(i)] for i in rng.choice(len(real), n, replace=False)]
    vectors = queries_near(np.load(args.directory / "centres.npy"), n, rng)
    flt = SearchFilter(kb_id="big")
    store = index._sparse
    kb, restrictions = store._searchable(flt, K, None)  # type: ignore[misc]
    pool = ThreadPoolExecutor(max_workers=2)
    searcher = kb.searcher
    analyzed = [list(dict.fromkeys(kb.analyze(t))) for t in texts]
    queries = [bm25_query(kb._schema, [(t, 1.0) for t in a], restrictions.on(searcher),
                          restrictions.excluded) for a in analyzed]
    addresses = [searcher.search(q, K, count=False).hits for q in queries]
    dense_lists = [index.search_dense(v, flt, K) for v in vectors]
    sparse_lists = [index.search_sparse(t, flt, K) for t in texts]

    def both(i: int) -> None:
        found = pool.submit(index.search_dense, vectors[i], flt, K)
        index.search_sparse(texts[i], flt, K)
        found.result()

    parts: dict[str, Callable[[int], object]] = {
        "dense channel": lambda i: index.search_dense(vectors[i], flt, K),
        "sparse channel": lambda i: index.search_sparse(texts[i], flt, K),
        "  analysis": lambda i: kb.analyze(texts[i]),
        "  query build": lambda i: bm25_query(kb._schema, [(t, 1.0) for t in analyzed[i]],
                                              restrictions.on(searcher), restrictions.excluded),
        "  tantivy search": lambda i: searcher.search(queries[i], K, count=False),
        "  stored-document reads": lambda i: [searcher.doc(a) for _, a in addresses[i]],
        "both channels, two threads": both,
        "fusion": lambda i: fuse(dense_lists[i], sparse_lists[i]),
        "thread hand-off (empty)": lambda i: pool.submit(int).result(),
    }
    fusions = {"": fuse}
    for name, run in parts.items():
        print(f"| {name} | {p50(run, n):.3f} |")
    if args.baseline:
        fusions[f", {args.baseline}'s fusion"] = fusion_at(args.baseline)
        fusion_side_by_side(fusions, dense_lists, sparse_lists)
    arrangements(index, pool, texts, vectors, flt, fusions)
    pool.shutdown()
    index.close()


def arrangements(index: EmbeddedIndex, pool: ThreadPoolExecutor, texts: list[str],
                 vectors: np.ndarray, flt: SearchFilter, fusions: dict[str, Fuse]) -> None:
    rows: dict[str, Callable[[int], object]] = {
        "dense alone": lambda i: index.search_dense(vectors[i], flt, K),
        "BM25 alone": lambda i: index.search_sparse(texts[i], flt, K),
    }
    for suffix, fused in fusions.items():
        rows.update(hybrids(index, pool, texts, vectors, flt, fused, suffix))
    times: dict[str, list[float]] = {name: [] for name in rows}
    for i in range(min(10, len(texts))):
        for run in rows.values():
            run(i)
    for i in range(len(texts)):
        for name, run in rows.items():
            started = time.perf_counter()
            run(i)
            times[name].append(time.perf_counter() - started)
    dense = statistics.median(times["dense alone"])
    for name, measured in times.items():
        median = statistics.median(measured)
        print(f"| {name} | {median * 1e3:.3f} | {median / dense:.2f}x |")


def fusion_side_by_side(fusions: dict[str, Fuse], dense: list[list[ChannelHit]],
                        sparse: list[list[ChannelHit]]) -> None:
    """Each fusion of each query's two lists, alternating which goes first, 3 rounds."""
    for round_ in range(3):
        times: dict[str, list[float]] = {name: [] for name in fusions}
        order = list(fusions.items())
        for i in range(len(dense)):
            for name, fused in order if (i + round_) % 2 else order[::-1]:
                started = time.perf_counter()
                fused(dense[i], sparse[i])
                times[name].append(time.perf_counter() - started)
        print("| fusion side by side, round", round_ + 1, "|", " | ".join(
            f"{name.strip(', ') or 'this tree'}: {statistics.median(t) * 1e3:.3f}"
            for name, t in times.items()), "|")


def hybrids(index: EmbeddedIndex, pool: ThreadPoolExecutor, texts: list[str],
            vectors: np.ndarray, flt: SearchFilter, fused: Fuse,
            suffix: str) -> dict[str, Callable[[int], object]]:
    def dense_aside(i: int) -> None:
        found = pool.submit(index.search_dense, vectors[i], flt, K)
        sparse = index.search_sparse(texts[i], flt, K)
        fused(found.result(), sparse)

    def sparse_aside(i: int) -> None:
        found = pool.submit(index.search_sparse, texts[i], flt, K)
        dense = index.search_dense(vectors[i], flt, K)
        fused(dense, found.result())

    def both_aside(i: int) -> None:
        dense = pool.submit(index.search_dense, vectors[i], flt, K)
        sparse = pool.submit(index.search_sparse, texts[i], flt, K)
        fused(dense.result(), sparse.result())

    return {f"hybrid, dense on the second thread{suffix}": dense_aside,
            f"hybrid, BM25 on the second thread{suffix}": sparse_aside,
            f"hybrid, both on pool threads{suffix}": both_aside}


if __name__ == "__main__":
    main()
