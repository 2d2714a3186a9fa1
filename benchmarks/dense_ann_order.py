"""Graph recall of a kb filter by the order rows reach the HNSW graph (issue 16, item 4).

Ingestion writes one knowledge base at a time, so a kb's rows are contiguous in the dense
store and reach the graph together. This builds the same rows (~30 noisy neighbours per
synthetic centre, documents of 10 chunks; kb `mid` = every 10th document, 10% of the rows;
`big` the rest) three ways and measures recall@30 of the graph search against the exact one:

- `bulk, kb-sorted`: rows written kb by kb, each kb's graph built once over all its rows;
- `incremental, kb-sorted`: each kb's graph built once the kb has `--min-rows` rows, then
  extended in steps as rows arrive (the path of ingestion);
- `incremental, interleaved`: the same, rows written in document order (kbs interleaved,
  the layout benchmarks/dense_ann.py uses).

Usage: python benchmarks/dense_ann_order.py [--rows 300000] [--queries 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from dense_ann_data import expand, queries_near, synthetic_centres

from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

K = 30
BATCH = 512


def kb_of(row: int) -> str:
    return "mid" if (row // 10) % 10 == 0 else "big"


def run(mode: str, matrix: np.ndarray, queries: np.ndarray, ef_construction: int,
        connectivity: int, min_rows: int) -> None:
    rows = matrix.shape[0]
    order = list(range(rows)) if "interleaved" in mode else sorted(range(rows), key=kb_of)
    # a graph per kb from min_rows live rows of it; bulk: none until every row is in
    settings = AnnSettings(min_rows=min_rows, background=False,
                           ef_construction=ef_construction, connectivity=connectivity)
    with tempfile.TemporaryDirectory() as tmp:
        store = DenseMatrixStore(
            Path(tmp), matrix.shape[1],
            settings if "incremental" in mode else dataclasses.replace(settings,
                                                                       min_rows=rows + 1))
        store._ann.settings = settings
        wall, cpu = time.perf_counter(), time.process_time()
        for lo in range(0, rows, BATCH):
            batch = order[lo:lo + BATCH]
            store.upsert([IndexRecord(chunk_id=str(i), document_id=f"d{i // 10}",
                                      kb_id=kb_of(i), text="") for i in batch], matrix[batch])
        store.sync_ann()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        snap = store._snapshot
        exact = dataclasses.replace(snap, ann=None, cache={})
        recalls = {}
        for kb in ("big", "mid"):
            flt = SearchFilter(kb_id=kb)
            recalls[kb] = np.mean([
                len({h.chunk_id for h in snap.search(q, flt, K)}
                    & {h.chunk_id for h in exact.search(q, flt, K)}) / K for q in queries])
        store.close()
    print(f"| {mode} | {rows:,} | {connectivity} / {ef_construction} | {wall:.1f} / {cpu:.1f} "
          f"| {recalls['big']:.4f} | "
          f"{recalls['mid']:.4f} | {'/'.join(f'{x:.2f}' for x in os.getloadavg())} |",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--ef-construction", default=str(AnnSettings().ef_construction),
                        help="comma-separated values to compare")
    parser.add_argument("--connectivity", type=int, default=AnnSettings().connectivity)
    parser.add_argument("--min-rows", type=int, default=AnnSettings().min_rows,
                        help="a kb's rows from which it gets a graph (RAGSIFT_DENSE_ANN_MIN_ROWS)")
    parser.add_argument("--modes", default="bulk, kb-sorted;incremental, kb-sorted;"
                        "incremental, interleaved")
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    centres = synthetic_centres(args.rows // 30, rng)
    matrix = expand(centres, args.rows, rng)
    queries = queries_near(centres, args.queries, rng)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores\n\n"
          "| order | rows | M / efConstruction | build wall / CPU s | recall@30 kb big (90%) "
          "| recall@30 kb mid (10%) | load 1/5/15 |\n|---|---|---|---|---|---|---|")
    for ef_construction in (int(v) for v in args.ef_construction.split(",")):
        for mode in args.modes.split(";"):
            run(mode, matrix, queries, ef_construction, args.connectivity, args.min_rows)


if __name__ == "__main__":
    main()
