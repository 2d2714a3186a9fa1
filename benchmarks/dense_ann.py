"""Dense search at 10k / 100k / 1M chunks: ragsift exact vs ragsift HNSW vs LanceDB.

Vectors have the structure of real embeddings (dense_ann_data): real e5 vectors as centres
when a dense store directory is given (--centres, e.g. the one `ragsift eval` builds), else
low-rank synthetic centres; each expanded into ~30 noisy neighbours. Chunks are documents of
10; kb `big` holds 90% of the rows (the unfiltered case: every ragsift search names a kb),
kb `mid` 10% (a broad filter), and `kb + 50 docs` is a fresh 50-document whitelist of `mid`
per query (a selective filter). Per query the configurations run interleaved: ragsift exact,
ragsift HNSW (same store; exact re-scoring), LanceDB flat (exact) and LanceDB IVF_HNSW_SQ.
Recall@30 is against ragsift's exact result. Dense only: hybrid needs BM25 over 1M texts,
too slow to build here. Reopen time and RSS are measured in a fresh process.

Usage: pip install lancedb   # the peer; not a dependency of ragsift
       python benchmarks/dense_ann.py [--sizes 10000,100000,1000000] [--queries 200]
                                      [--centres DENSE_DIR] [--no-lancedb]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from dense_ann_data import expand, queries_near, real_centres, synthetic_centres
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_snapshot import Snapshot
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

os.environ.setdefault("LANCE_LOG", "error")  # one deprecation warning per query otherwise
K = 30
BATCH = 4096
Float32Array = NDArray[np.float32]
Search = Callable[[Float32Array, SearchFilter], list[int]]


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def rss_parts() -> tuple[float, float]:
    """Resident GiB: private (heap) and file-backed (mapped matrix, graph and index pages,
    which the kernel can drop and read back)."""
    status = dict(line.split(":", 1) for line in
                  Path("/proc/self/status").read_text().splitlines() if ":" in line)
    anon, file = (int(status[key].split()[0]) / 2**20 for key in ("RssAnon", "RssFile"))
    return anon, file


def rss_split() -> str:
    anon, file = rss_parts()
    return f"private {anon:.2f} GiB + file-backed {file:.2f} GiB"


def simd_in_effect() -> str:
    import faiss  # the `ann` extra

    config = getattr(faiss, "SIMDConfig", None)
    return "n/a" if config is None else str(config.get_level_name())


def records(start: int, stop: int) -> list[IndexRecord]:
    return [IndexRecord(chunk_id=str(i), document_id=f"d{i // 10}",
                        kb_id="mid" if (i // 10) % 10 == 0 else "big", text="")
            for i in range(start, stop)]


def build_store(directory: Path, matrix: Float32Array, settings: AnnSettings, bulk: bool
                ) -> tuple[DenseMatrixStore, float, float]:
    """The store, wall s and CPU s of upserts plus bringing the graphs up to date.

    `bulk`: no graph until every row is in, then each kb's built in one pass.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    rows = matrix.shape[0]
    store = DenseMatrixStore(directory, matrix.shape[1], dataclasses.replace(
        settings, min_rows=rows + 1) if bulk else settings)
    for start in range(0, rows, BATCH):
        stop = min(rows, start + BATCH)
        store.upsert(records(start, stop), matrix[start:stop])
    store._ann.settings = settings
    store.sync_ann()
    return store, time.perf_counter() - wall, time.process_time() - cpu


def lance_table(directory: Path, matrix: Float32Array) -> tuple[object, float, float]:
    """A LanceDB table of the same rows and its IVF_HNSW_SQ index; build wall and CPU s."""
    import lancedb
    import pyarrow as pa  # type: ignore[import-untyped]

    wall, cpu = time.perf_counter(), time.process_time()
    db = lancedb.connect(str(directory))
    rows = matrix.shape[0]

    def batches() -> object:
        for start in range(0, rows, 65_536):
            stop = min(rows, start + 65_536)
            ids = np.arange(start, stop)
            flat = pa.array(matrix[start:stop].reshape(-1))
            yield pa.record_batch([
                pa.array(ids), pa.array(np.where((ids // 10) % 10 == 0, "mid", "big")),
                pa.array([f"d{i // 10}" for i in ids]),
                pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1])],
                names=["id", "kb", "doc", "vector"])

    schema = pa.schema([("id", pa.int64()), ("kb", pa.string()), ("doc", pa.string()),
                        ("vector", pa.list_(pa.float32(), matrix.shape[1]))])
    table = db.create_table("chunks", data=batches(), schema=schema)
    table.create_index(metric="dot", index_type="IVF_HNSW_SQ")
    table.create_scalar_index("kb", index_type="BITMAP")
    return table, time.perf_counter() - wall, time.process_time() - cpu


def lance_where(flt: SearchFilter) -> str:
    where = f"kb = '{flt.kb_id}'"
    if flt.document_ids is not None:
        where += " AND doc IN (" + ",".join(f"'{d}'" for d in sorted(flt.document_ids)) + ")"
    return where


def lance_search(table: object, exact: bool) -> Search:
    def search(query: Float32Array, flt: SearchFilter) -> list[int]:
        builder = table.search(query).distance_type("dot")  # type: ignore[attr-defined]
        if exact:
            builder = builder.bypass_vector_index()
        found = builder.where(lance_where(flt), prefilter=True).limit(K).select(["id"])
        return [int(i) for i in found.to_arrow()["id"].to_pylist()]

    return search


def store_search(store: DenseMatrixStore, exact: bool) -> Search:
    memo: list[Snapshot] = []

    def search(query: Float32Array, flt: SearchFilter) -> list[int]:
        snap = store._snapshot  # the same snapshot, searched with or without its graph
        if exact:
            if not memo or memo[0] is not snap:
                memo[:] = [snap, dataclasses.replace(snap, ann=None, cache={})]
            snap = memo[1]
        return [int(h.chunk_id) for h in snap.search(query, flt, K)]

    return search


def measure(configs: dict[str, Search], queries: Float32Array,
            filters: list[Callable[[int], SearchFilter]], names: list[str]) -> None:
    for name, make_filter in zip(names, filters, strict=True):
        times: dict[str, list[float]] = {c: [] for c in configs}
        found: dict[str, list[list[int]]] = {c: [] for c in configs}
        cpu0 = {c: 0.0 for c in configs}
        order_rng = np.random.default_rng(0)
        for qi, query in enumerate(queries):
            flt = make_filter(qi)
            # interleaved in a shuffled order: with a rotation, the config after LanceDB's
            # was always the same one and paid for its still-spinning threads
            for config in order_rng.permutation(list(configs)).tolist():
                search = configs[config]
                wall, cpu = time.perf_counter(), time.process_time()
                found[config].append(search(query, flt))
                times[config].append(time.perf_counter() - wall)
                cpu0[config] += time.process_time() - cpu
        truth = found["ragsift exact"]
        base = statistics.median(times["ragsift exact"])
        for config in configs:
            p50 = statistics.median(times[config])
            p95 = float(np.percentile(times[config], 95))
            hits = [len(set(f) & set(t)) / max(1, len(t)) for f, t in
                    zip(found[config], truth, strict=True)]
            print(f"| {name} | {config} | {p50 * 1e3:.2f} | {p95 * 1e3:.2f} | "
                  f"{cpu0[config] / len(queries) * 1e3:.2f} | {np.mean(hits):.4f} | "
                  f"{base / p50:.1f}x | {load()} |", flush=True)


def reopen_probe(directory: str, queries_path: str) -> None:
    """In a fresh process: open the store, run ANN searches, report timings and RSS."""
    queries = np.load(queries_path)
    wall, cpu = time.perf_counter(), time.process_time()
    store = DenseMatrixStore(Path(directory), queries.shape[1], AnnSettings(min_rows=1))
    opened, opened_cpu = time.perf_counter() - wall, time.process_time() - cpu
    after_open = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    ann_rows = store.ann_rows()
    for query in queries:
        store.search(query, SearchFilter(kb_id="big"), K)
        store.search(query, SearchFilter(kb_id="mid"), K)
    rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    print(json.dumps({"reopen_s": opened, "reopen_cpu_s": opened_cpu, "ann_rows": ann_rows,
                      "rss_after_open_gib": after_open / 2**30, "rss_gib": rss / 2**30,
                      "rss_split": rss_split(),
                      "max_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))


def run_size(size: int, centres: Float32Array, n_queries: int, lance: bool, tmp: Path,
             incremental: bool, ef_construction: int, simd_level: str) -> None:
    rng = np.random.default_rng(size)
    matrix = expand(centres, size, rng)
    queries = queries_near(centres, n_queries, rng)
    # each kb's graph is built in bulk once the rows are in (as when a kb crosses min_rows);
    # --incremental builds it from the first batch on, adding each batch as it lands
    store, wall, cpu = build_store(
        tmp / f"store-{size}", matrix,
        AnnSettings(min_rows=1, ef_construction=ef_construction, simd_level=simd_level),
        bulk=not incremental)
    print(f"\n### {size:,} chunks (centres {centres.shape[0]:,}), load {load()}")
    print(f"ragsift build (upsert + HNSW, embedding excluded): {size / wall:,.0f} chunks/s "
          f"(wall {wall:.1f} s, CPU {cpu:.1f} s), graph rows {store.ann_rows():,}, "
          f"faiss SIMD {simd_in_effect()}")
    configs: dict[str, Search] = {"ragsift exact": store_search(store, exact=True),
                                  "ragsift hnsw": store_search(store, exact=False)}
    if lance:
        table, lwall, lcpu = lance_table(tmp / f"lance-{size}", matrix)
        print(f"lancedb build (table + IVF_HNSW_SQ): {size / lwall:,.0f} chunks/s "
              f"(wall {lwall:.1f} s, CPU {lcpu:.1f} s), load {load()}")
        configs["lancedb flat"] = lance_search(table, exact=True)
        configs["lancedb ivf_hnsw_sq"] = lance_search(table, exact=False)
    mid_docs = np.arange(0, size // 10, 10)
    whitelists = [frozenset(f"d{d}" for d in rng.choice(mid_docs, min(50, mid_docs.size),
                                                         replace=False))
                  for _ in range(n_queries)]
    print("| filter | config | p50 ms | p95 ms | CPU ms/query | recall@30 | speed-up vs exact"
          " | load 1/5/15 |\n|---|---|---|---|---|---|---|---|")
    measure(configs, queries,
            [lambda _: SearchFilter(kb_id="big"), lambda _: SearchFilter(kb_id="mid"),
             lambda qi: SearchFilter(kb_id="mid", document_ids=whitelists[qi])],
            ["kb (90% rows)", "kb (10% rows)", "kb + 50 docs"])
    store.close()
    del matrix
    np.save(tmp / "queries.npy", queries[:50])
    probe = subprocess.run([sys.executable, __file__, "--probe", str(tmp / f"store-{size}"),
                            str(tmp / "queries.npy")], capture_output=True, text=True, check=True)
    print(f"fresh process: {probe.stdout.strip()} load {load()}")


def reuse(directory: Path, centres: Float32Array, n_queries: int, boost: float,
          oversample: float, ef_search: int) -> None:
    """Search a store a previous run left (its graph saved): reopen, ragsift configs, RSS."""
    wall, cpu = time.perf_counter(), time.process_time()
    store = DenseMatrixStore(directory, centres.shape[1],
                             AnnSettings(min_rows=1, filter_ef_boost=boost,
                                         oversample=oversample, ef_search=ef_search))
    opened, opened_cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = store.count()
    print(f"\n### {size:,} chunks reopened from {directory}: {opened:.2f} s (CPU "
          f"{opened_cpu:.2f} s), graph rows {store.ann_rows():,}, load {load()}")
    rng = np.random.default_rng(size + 1)
    queries = queries_near(centres, n_queries, rng)
    mid_docs = np.arange(0, size // 10, 10)
    whitelists = [frozenset(f"d{d}" for d in rng.choice(mid_docs, 50, replace=False))
                  for _ in range(n_queries)]
    print("| filter | config | p50 ms | p95 ms | CPU ms/query | recall@30 | speed-up vs exact"
          " | load 1/5/15 |\n|---|---|---|---|---|---|---|---|")
    measure({"ragsift exact": store_search(store, exact=True),
             "ragsift hnsw": store_search(store, exact=False)}, queries,
            [lambda _: SearchFilter(kb_id="big"), lambda _: SearchFilter(kb_id="mid"),
             lambda qi: SearchFilter(kb_id="mid", document_ids=whitelists[qi])],
            ["kb (90% rows)", "kb (10% rows)", "kb + 50 docs"])
    rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    print(f"RSS after the searches {rss / 2**30:.2f} GiB ({rss_split()}; exact scans page in "
          f"the whole matrix), load {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--centres", type=Path, default=None)
    parser.add_argument("--centres-kb", default=None, help="only this kb's vectors")
    parser.add_argument("--no-lancedb", action="store_true")
    parser.add_argument("--incremental", action="store_true")
    parser.add_argument("--probe", nargs=2, default=None)
    parser.add_argument("--filter-ef-boost", type=float, default=AnnSettings().filter_ef_boost)
    parser.add_argument("--ef-search", type=int, default=AnnSettings().ef_search)
    parser.add_argument("--oversample", type=float, default=AnnSettings().oversample)
    parser.add_argument("--ef-construction", type=int, default=AnnSettings().ef_construction)
    parser.add_argument("--simd-level", default=AnnSettings().simd_level,
                        help="faiss's kernels for the build (auto, library, AVX2, AVX512...)")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="search a store directory an earlier run left")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the stores in this directory and leave them (for --reuse)")
    args = parser.parse_args()
    if args.probe:
        reopen_probe(*args.probe)
        return
    rng = np.random.default_rng(1)
    centres = real_centres(args.centres, args.centres_kb) if args.centres else \
        synthetic_centres(32_000, rng)
    print(f"centres: {'real ' + str(args.centres) if args.centres else 'synthetic'}, "
          f"{os.cpu_count()} cores, load {load()}, {time.strftime('%Y-%m-%d %H:%M')}")
    if args.reuse:
        reuse(args.reuse, centres, args.queries, args.filter_ef_boost, args.oversample,
              args.ef_search)
        return
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        for size in (int(s) for s in args.sizes.split(",")):
            run_size(size, centres, args.queries, not args.no_lancedb, args.keep or Path(tmp),
                     args.incremental, args.ef_construction, args.simd_level)


if __name__ == "__main__":
    main()
