"""How far a filtered graph walk must raise ef: recall@30 and CPU per search by filter share
and by the ef rule's exponent (issue 36's 50 % filter; AnnSettings.filter_ef_exponent).

A dense store of N rows built as benchmarks/dense_ann.py builds it (kb `big` 90 % of the
rows, `mid` 10 %, documents of 10 chunks, vectors with the structure of real embeddings), its
graphs saved in DIR on the first run and reused after. Per share s, each query gets a fresh
random set of `big`'s documents holding a share s of its rows (a metadata filter's
whitelist); the graph's answer (exact re-scoring of its candidates) is compared with the
exact scan of the same allowed rows. The unfiltered kb search is the bar a filter's recall
should reach. Shares whose allowed rows fall under exact_max_rows are scanned exactly
whatever the rule. The CPU columns include finding each query's fresh allowed rows (a
repeated filter's are cached in the product), so they compare exponents at one share, not
shares; benchmarks/metadata_filter_scale.py --ef-exponents measures the cost in the hybrid.

Usage: PYTHONPATH=src python research/filter_ef_probe.py DIR [--size 100000] [--queries 200]
       [--shares 1,0.7,0.5,0.35,0.25] [--exponents 1.0,1.3]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import dense_ann as bench
from dense_ann_data import expand, queries_near, synthetic_centres

from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter


def store_at(directory: Path, size: int) -> DenseMatrixStore:
    marker = directory / f"built-{size}"
    if not marker.exists():
        rng = np.random.default_rng(size)
        matrix = expand(synthetic_centres(32_000, np.random.default_rng(1)), size, rng)
        store, wall, cpu = bench.build_store(directory / "store", matrix,
                                             AnnSettings(min_rows=1), bulk=True)
        print(f"built {size:,} rows: wall {wall:.0f} s, CPU {cpu:.0f} s", flush=True)
        store.close()
        marker.touch()
    return DenseMatrixStore(directory / "store", 384, AnnSettings())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shares", default="1,0.7,0.5,0.35,0.25")
    parser.add_argument("--exponents", default="1.0,1.3")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    store = store_at(args.dir, args.size)
    rng = np.random.default_rng(7)
    queries = queries_near(synthetic_centres(32_000, np.random.default_rng(1)), args.queries, rng)
    big_docs = np.array([d for d in range(args.size // 10) if d % 10 != 0])
    exact = bench.store_search(store, exact=True)
    graph = bench.store_search(store, exact=False)
    print(f"{args.size:,} rows, load {bench.load()}, {time.strftime('%Y-%m-%d %H:%M')}")
    print("| share | exponent | ef | recall@30 | CPU ms/search | exact CPU ms |\n"
          "|---|---|---|---|---|---|")
    for share in (float(s) for s in args.shares.split(",")):
        filters = [SearchFilter(kb_id="big") if share >= 1 else SearchFilter(
            kb_id="big", document_ids=frozenset(f"d{d}" for d in rng.choice(
                big_docs, int(share * big_docs.size), replace=False)))
            for _ in range(args.queries)]
        truth, exact_cpu = [], 0.0
        for query, flt in zip(queries, filters, strict=True):
            cpu = time.process_time()
            truth.append(set(exact(query, flt)))
            exact_cpu += time.process_time() - cpu
        for exponent in (float(e) for e in args.exponents.split(",")):
            settings = dataclasses.replace(store._ann.settings, filter_ef_exponent=exponent)
            store._ann.settings = settings
            recalls, cpu_total = [], 0.0
            for query, flt, want in zip(queries, filters, truth, strict=True):
                cpu = time.process_time()
                found = graph(query, flt)
                cpu_total += time.process_time() - cpu
                recalls.append(len(set(found) & want) / max(1, len(want)))
            ef = settings.ef_search * min(settings.filter_ef_boost,
                                          share ** -exponent * 0.9 ** -0.6)
            print(f"| {share} | {exponent} | {ef:.0f} | {statistics.fmean(recalls):.4f} | "
                  f"{cpu_total / args.queries * 1e3:.2f} | "
                  f"{exact_cpu / args.queries * 1e3:.2f} |", flush=True)
    store.close()


if __name__ == "__main__":
    main()
