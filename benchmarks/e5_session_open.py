"""What opening the ONNX e5 session costs a process, with and without the packed graph
(RAGSIFT_EMBEDDER_PACKED_GRAPH, ragsift/adapters/onnx_e5/prepacked.py), issue 39 item 1.

Each run is a fresh process that imports numpy and onnxruntime, then times (CPU-s of the
process, all threads) `OnnxE5Embedder.prepare()` (the session's open: the packed graph, or the
plain one optimized and packed at open) and the first query embedding; the two settings are
interleaved run by run. Both read the same cache folder (the default, or --cache-dir); the
packed graph is made there first if missing. Also checks that both give the same vectors.

Usage: python benchmarks/e5_session_open.py [--runs 9] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERIES = ["年假有几天", "How many days of annual leave do employees get?"]


def one(packed: bool, cache_dir: str | None) -> None:
    """In this process: print the JSON of one measurement."""
    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    import numpy as np
    import onnxruntime  # noqa: F401 - imported before the clock, as a search has

    from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder

    embedder = OnnxE5Embedder(cache_dir=Path(cache_dir) if cache_dir else None,
                              packed_graph=packed)
    started = cpu()
    embedder.prepare()
    opened = cpu()
    vectors = [embedder.embed_query(query) for query in QUERIES]
    first = cpu()
    runtime = embedder._runtime
    print(json.dumps({
        "open": opened - started, "queries": first - opened,
        "source": Path(str(runtime._source if runtime else "")).name,
        "vectors": np.stack(vectors).tobytes().hex(),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--cache-dir")
    parser.add_argument("--one", choices=["packed", "plain"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one == "packed", args.cache_dir)
        return
    extra = ["--cache-dir", args.cache_dir] if args.cache_dir else []
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # as the `ragsift` command starts it
    found: dict[str, list[dict[str, object]]] = {"plain": [], "packed": []}
    for run in range(args.runs + 1):  # the first pair makes the packed graph if missing
        for kind in ("plain", "packed"):
            out = subprocess.run([sys.executable, __file__, "--one", kind, *extra], env=env,
                                 check=True, capture_output=True, text=True).stdout
            if run:
                found[kind].append(json.loads(out))
    same = {str(r["vectors"]) for rows in found.values() for r in rows}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()}, "
          f"{args.runs} interleaved pairs of fresh processes; vectors identical: {len(same) == 1}")
    print("\n| graph | file | open CPU-s p50 (min-max) | two queries CPU-s p50 | max RSS MB |\n"
          "|---|---|---:|---:|---:|")
    for kind, rows in found.items():
        opens = [float(str(r["open"])) for r in rows]
        queries = [float(str(r["queries"])) for r in rows]
        print(f"| {kind} | {rows[0]['source']} | {statistics.median(opens):.3f} "
              f"({min(opens):.3f}-{max(opens):.3f}) | {statistics.median(queries):.3f} | "
              f"{statistics.median(float(str(r['rss_mb'])) for r in rows):.0f} |")


if __name__ == "__main__":
    main()
