"""Which HNSW library the embedded index uses: faiss-cpu, usearch and hnswlib side by side.

Each library indexes the same structured vectors (dense_ann_data); measured per library in one
run: build rate (wall and CPU), single-thread query p50 for recall@30 (candidates re-scored
exactly, as the store does), the same under a filter allowing 20% of rows (inside the search
where the library can, else post-filtered with oversampling), save + reopen time.

Usage: pip install usearch hnswlib faiss-cpu
       python benchmarks/dense_ann_libraries.py [--rows 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dense_ann_data import exact_top, expand, queries_near, recall, synthetic_centres
from numpy.typing import NDArray

K = 30
Search = Callable[[NDArray[np.float32], NDArray[np.bool_] | None, int], list[int]]


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, CPU s of the process, result)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def rescored(matrix: NDArray[np.float32], query: NDArray[np.float32], rows: NDArray[Any],
             k: int) -> list[int]:
    rows = rows[rows >= 0]
    scores = matrix[rows] @ query
    return [int(r) for r in rows[np.argsort(-scores)[:k]]]


def faiss_lib(matrix: NDArray[np.float32], path: Path, sq: bool) -> tuple[Search, float, float,
                                                                          float]:
    faiss: Any = importlib.import_module("faiss")
    dim = matrix.shape[1]
    index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, 32, faiss.METRIC_INNER_PRODUCT)\
        if sq else faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80

    def build() -> None:
        if sq:
            index.train(matrix[:50_000])
        index.add(matrix)

    wall, cpu, _ = timed(build)
    faiss.write_index(index, str(path))
    reopen, _, index = timed(lambda: faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC))
    faiss.omp_set_num_threads(1)

    def search(query: NDArray[np.float32], allowed: NDArray[np.bool_] | None, ef: int
               ) -> list[int]:
        params = faiss.SearchParametersHNSW(efSearch=ef)
        if allowed is not None:
            bits = np.packbits(allowed, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(allowed.size, faiss.swig_ptr(bits))
        _, labels = index.search(query.reshape(1, -1), max(K, ef // 2), params=params)
        return rescored(matrix, query, labels[0], K)

    return search, wall, cpu, reopen


def usearch_lib(matrix: NDArray[np.float32], path: Path, dtype: str) -> tuple[Search, float,
                                                                             float, float]:
    Index: Any = importlib.import_module("usearch.index").Index
    index = Index(ndim=matrix.shape[1], metric="ip", dtype=dtype, connectivity=16,
                  expansion_add=128)
    keys = np.arange(matrix.shape[0], dtype=np.uint64)
    wall, cpu, _ = timed(lambda: index.add(keys, matrix, threads=os.cpu_count() or 1))
    index.save(str(path))
    viewed = Index(ndim=matrix.shape[1], metric="ip", dtype=dtype)
    reopen, _, _ = timed(lambda: viewed.view(str(path)))

    def search(query: NDArray[np.float32], allowed: NDArray[np.bool_] | None, ef: int
               ) -> list[int]:
        viewed.expansion_search = ef
        # no filter inside the search from Python: oversample by the inverse share, post-filter
        want = max(K, ef // 2)
        if allowed is not None:
            want = int(want / max(allowed.mean(), 1e-3))
        found = viewed.search(query, want, threads=1).keys.astype(np.int64)
        if allowed is not None:
            found = found[allowed[found]]
        return rescored(matrix, query, found, K)

    return search, wall, cpu, reopen


def hnswlib_lib(matrix: NDArray[np.float32], path: Path) -> tuple[Search, float, float, float]:
    hnswlib: Any = importlib.import_module("hnswlib")
    index = hnswlib.Index(space="ip", dim=matrix.shape[1])
    index.init_index(max_elements=matrix.shape[0], M=16, ef_construction=128)
    wall, cpu, _ = timed(lambda: index.add_items(matrix, num_threads=os.cpu_count() or 1))
    index.save_index(str(path))
    loaded = hnswlib.Index(space="ip", dim=matrix.shape[1])
    reopen, _, _ = timed(lambda: loaded.load_index(str(path)))
    loaded.set_num_threads(1)

    def search(query: NDArray[np.float32], allowed: NDArray[np.bool_] | None, ef: int
               ) -> list[int]:
        loaded.set_ef(ef)
        # the filter is a Python callable per visited node: inside the search, but slow
        flt = (lambda label: bool(allowed[label])) if allowed is not None else None
        labels, _ = loaded.knn_query(query, k=max(K, ef // 2), filter=flt)
        return rescored(matrix, query, labels[0].astype(np.int64), K)

    return search, wall, cpu, reopen


def measure(name: str, search: Search, queries: NDArray[np.float32],
            truth: NDArray[np.int64], allowed: NDArray[np.bool_] | None,
            truth_f: NDArray[np.int64]) -> None:
    for ef in (64, 128, 256):
        for label, mask, expect in (("all", None, truth), ("20%", allowed, truth_f)):
            found, times = [], []
            for query in queries:
                start = time.perf_counter()
                found.append(search(query, mask, ef))
                times.append(time.perf_counter() - start)
            print(f"  {name:14s} ef={ef:<4d} {label:4s} p50 {statistics.median(times)*1e3:6.2f} ms"
                  f"  recall@30 {recall(found, expect):.4f}  load {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    centres = synthetic_centres(max(1, args.rows // 30), rng)
    matrix = expand(centres, args.rows, rng)
    queries = queries_near(centres, args.queries, rng)
    allowed = rng.random(args.rows) < 0.2
    truth, truth_f = exact_top(matrix, queries, K), exact_top(matrix, queries, K, allowed)
    print(f"{args.rows} rows, {args.queries} queries, cores {os.cpu_count()}, "
          f"load {os.getloadavg()}")
    builders: dict[str, Callable[[Path], tuple[Search, float, float, float]]] = {
        "faiss-flat": lambda p: faiss_lib(matrix, p, sq=False),
        "faiss-sq8": lambda p: faiss_lib(matrix, p, sq=True),
        "usearch-i8": lambda p: usearch_lib(matrix, p, "i8"),
        "usearch-f16": lambda p: usearch_lib(matrix, p, "f16"),
        "hnswlib": lambda p: hnswlib_lib(matrix, p),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, builder in builders.items():
            path = Path(tmp) / name
            search, wall, cpu, reopen = builder(path)
            print(f"{name}: build {args.rows / wall:,.0f} rows/s (wall {wall:.1f} s, CPU "
                  f"{cpu:.1f} s), file {path.stat().st_size / 2**20:.0f} MiB, reopen "
                  f"{reopen * 1e3:.0f} ms, load {os.getloadavg()[0]:.2f}")
            measure(name, search, queries, truth, allowed, truth_f)


if __name__ == "__main__":
    main()
