"""The dense channel of metadata_filter_scale's searches, alone: exact scans against the
kb's HNSW graph searched with the filter, CPU per search and recall@10/@30 against exact.

Reads a build of `metadata_filter_scale.py --dir DIR` (KB `a`: 100,352 rows with its graph;
KB `b`: 19,648 rows, under the graph's `min_rows`, so here its graph is built in memory with
the store's parameters). Cases: a unfiltered (the graph, as searched), the `$or` filter
(19,080 rows) and `dept = hr` (10,040 rows) of `a`, and b whole. For each: the store's own
search (what it does today), then the graph at several ef (candidates 2x k re-scored exactly,
as dense_ann does). The thread's CPU time, so other load inflates it less than wall time.

Usage: python benchmarks/metadata_filter_dense.py --dir DIR [--queries 60] [--efs 96,192]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from dense_ann_data import queries_near
from document_ids import document_id
from metadata_filter_scale import DIMENSION, K, metadata_of

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_ann_files import GraphParams, load_faiss, new_graph
from ragsift.adapters.embedded_index.faiss_simd import apply_simd_level
from ragsift.domain.filters import SearchFilter


def cpu_ms(run: Callable[[int], object], n: int) -> float:
    for i in range(3):
        run(i)
    times = []
    for i in range(n):
        started = time.thread_time()
        run(i)
        times.append(time.thread_time() - started)
    return statistics.median(times) * 1e3


def recall(found: list[np.ndarray], truth: list[np.ndarray], k: int) -> float:
    return float(np.mean([len(set(f[:k].tolist()) & set(t[:k].tolist())) / k
                          for f, t in zip(found, truth, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--efs", default="96,192,384,768",
                        help="graph efforts to try ('': the store's search only)")
    args = parser.parse_args()
    n = args.queries
    index = EmbeddedIndex(args.dir / "index", DIMENSION, ann=AnnSettings(background=False))
    dense = index._dense
    snap = dense._snapshot
    matrix = snap.matrix
    faiss = load_faiss()
    assert faiss is not None, "needs faiss-cpu (the ann extra)"
    apply_simd_level(faiss, "auto")
    faiss.omp_set_num_threads(1)
    queries = queries_near(np.load(args.dir / "centres.npy"), n, np.random.default_rng(37))
    # the build's document ids (metadata_filter_scale.py --ids): its marker names the shape
    ids = "uuid" if any(args.dir.glob("built-*-uuid")) else "short"
    docs = {"$or (19%)": lambda m: m["dept"] == "hr" or (m["dept"] == "it" and m["year"] < 2024),
            "dept = hr (10%)": lambda m: m["dept"] == "hr"}
    cases = {"a unfiltered": SearchFilter(kb_id="a"), "b whole": SearchFilter(kb_id="b")}
    for name, keep in docs.items():
        allowed = frozenset(document_id(d, ids) for d in range(snap.size // 10)
                            if keep(metadata_of(d)))
        cases[f"a {name}"] = SearchFilter(kb_id="a", document_ids=allowed)
    graphs = {kb: g.index for kb, g in dense._ann._graphs.items()}
    rows_b = snap.candidates(cases["b whole"]).rows
    graphs["b"] = new_graph(faiss, DIMENSION, GraphParams(32, 80), np.asarray(matrix[rows_b]))
    graphs["b"].add_with_ids(np.ascontiguousarray(matrix[rows_b]), rows_b.astype(np.int64))
    print("| case | rows | search | CPU ms | recall@10 | recall@30 |\n|---|---|---|---|---|---|")
    for name, flt in cases.items():
        rows = snap.candidates(flt).rows
        truth = [rows[np.argsort(-(np.asarray(matrix[rows]) @ q), kind="stable")[:K]]
                 for q in queries]
        ms = cpu_ms(lambda i, f=flt: dense.search(queries[i], f, K), n)
        found_ids = [[h.chunk_id for h in dense.search(q, flt, K)] for q in queries]
        truth_ids = [np.asarray([snap.ids[r] for r in t]) for t in truth]
        found = [np.asarray(f) for f in found_ids]
        print(f"| {name} | {rows.size:,} | the store's search | {ms:.2f} "
              f"| {recall(found, truth_ids, 10):.3f} | {recall(found, truth_ids, 30):.3f} |")
        mask = np.zeros(snap.size, dtype=np.bool_)
        mask[rows] = True
        bits = np.packbits(mask, bitorder="little")
        graph = graphs[flt.kb_id]
        for ef in [int(x) for x in args.efs.split(",") if x]:
            params = faiss.SearchParametersHNSW(efSearch=ef)
            params.sel = faiss.IDSelectorBitmap(bits.size, faiss.swig_ptr(bits))

            def run(i: int, p: object = params, g: object = graph) -> np.ndarray:
                _, labels = g.search(queries[i].reshape(1, -1), 2 * K, params=p)  # type: ignore[attr-defined]
                got = labels[0][labels[0] >= 0]
                return got[np.argsort(-(np.asarray(matrix[got]) @ queries[i]))[:K]]

            ms = cpu_ms(run, n)
            found = [run(i) for i in range(n)]
            print(f"| {name} | {rows.size:,} | graph, ef {ef} | {ms:.2f} "
                  f"| {recall(found, truth, 10):.3f} | {recall(found, truth, 30):.3f} |")
    index.close()


if __name__ == "__main__":
    main()
