"""faiss's SIMD levels side by side: HNSW graph build and search, as the dense store uses them.

faiss-cpu's dynamic-dispatch wheels pick the CPU's highest level at import (AVX512_SPR on
Sapphire Rapids and newer); `RAGSIFT_DENSE_ANN_SIMD_LEVEL` (ragsift/adapters/embedded_index/
faiss_simd.py) can choose another. This builds one kb's graph the store's way (IndexIDMap over
IndexHNSWSQ, inner product, M 32, efConstruction 80, 32,768-row adds) at every level the CPU
supports (AVX512_VPOPCNT is Zen 4 / Ice Lake's), levels interleaved over rounds in
alternating order, and searches it the store's way (ef 192, 60 hits
re-scored exactly, recall@30 against exact search). Vectors: dense_ann_data's synthetic
centres, ~31 noisy neighbours each.

Usage: python benchmarks/faiss_simd.py [--rows 300000] [--rounds 2] [--quantisers sq8,fp16]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from typing import Any

import numpy as np
from dense_ann_data import expand, queries_near, synthetic_centres

LEVELS = ("AVX2", "AVX512", "AVX512_VPOPCNT", "AVX512_SPR")
STEP = 32_768


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def supported(faiss: Any) -> list[str]:
    found = []
    before = getattr(faiss, f"SIMDLevel_{faiss.SIMDConfig.get_level_name()}")
    for name in LEVELS:
        level = getattr(faiss, f"SIMDLevel_{name}", None)
        if level is None:
            continue
        try:
            faiss.SIMDConfig.set_level(level)
            found.append(name)
        except Exception:  # faiss's own exception for a level the CPU lacks
            continue
    faiss.SIMDConfig.set_level(before)
    return found


def build(faiss: Any, matrix: np.ndarray, quantiser: str) -> tuple[Any, float, float]:
    qtype = {"sq8": faiss.ScalarQuantizer.QT_8bit, "fp16": faiss.ScalarQuantizer.QT_fp16}
    inner = faiss.IndexHNSWSQ(matrix.shape[1], qtype[quantiser], 32, faiss.METRIC_INNER_PRODUCT)
    inner.hnsw.efConstruction = 80
    inner.train(matrix[:65_536])
    index = faiss.IndexIDMap(inner)
    wall, cpu = time.perf_counter(), cpu_s()
    for start in range(0, matrix.shape[0], STEP):
        stop = min(matrix.shape[0], start + STEP)
        index.add_with_ids(matrix[start:stop], np.arange(start, stop, dtype=np.int64))
    return index, time.perf_counter() - wall, cpu_s() - cpu


def search(faiss: Any, index: Any, matrix: np.ndarray, queries: np.ndarray,
           truth: np.ndarray) -> tuple[float, float, float]:
    params = faiss.SearchParametersHNSW(efSearch=192)
    hits = []
    wall, cpu = time.perf_counter(), cpu_s()
    for qi in range(queries.shape[0]):
        _, labels = index.search(queries[qi:qi + 1], 60, params=params)
        found = labels[0][labels[0] >= 0]
        top = found[np.argsort(-(matrix[found] @ queries[qi]))[:30]]
        hits.append(len(set(top.tolist()) & set(truth[qi].tolist())) / 30)
    n = queries.shape[0]
    return ((time.perf_counter() - wall) / n * 1000, (cpu_s() - cpu) / n * 1000,
            float(np.mean(hits)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--quantisers", default="sq8,fp16")
    args = parser.parse_args()
    import faiss  # the `ann` extra

    if not hasattr(faiss, "SIMDConfig"):
        raise SystemExit("this faiss build has no runtime SIMD dispatch")
    picked = faiss.SIMDConfig.get_level_name()
    levels = supported(faiss)
    rng = np.random.default_rng(args.rows)
    centres = synthetic_centres(args.rows // 31, rng)
    matrix = expand(centres, args.rows, rng)
    queries = queries_near(centres, args.queries, rng)
    truth = np.argsort(-(queries @ matrix.T), axis=1)[:, :30]
    print(f"faiss {faiss.__version__}, picked {picked}, supported {', '.join(levels)}; "
          f"{args.rows:,} rows, {os.cpu_count()} cores, load "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}, {time.strftime('%Y-%m-%d %H:%M')}")
    print("| round | quantiser | level | build rows/s | build wall / CPU s | search mean ms "
          "| search CPU ms | recall@30 | load 1 |\n|---|---|---|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        for quantiser in args.quantisers.split(","):
            # the order flips each round, so no level always runs first or last
            for name in levels if round_ % 2 else levels[::-1]:
                faiss.SIMDConfig.set_level(getattr(faiss, f"SIMDLevel_{name}"))
                index, wall, cpu = build(faiss, matrix, quantiser)
                s_wall, s_cpu, rec = search(faiss, index, matrix, queries, truth)
                print(f"| {round_} | {quantiser} | {name} | {args.rows / wall:,.0f} | "
                      f"{wall:.1f} / {cpu:.1f} | {s_wall:.2f} | {s_cpu:.2f} | {rec:.4f} | "
                      f"{os.getloadavg()[0]:.2f} |", flush=True)
                del index


if __name__ == "__main__":
    main()
