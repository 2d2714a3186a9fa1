"""What a fresh document whitelist costs the dense store, this tree against a git revision.

A dense store (DenseMatrixStore, the embedded index's dense half; no BM25, no graph: neither is
touched) of --rows rows of dimension 32: kb `a` holds 90 % of the rows, kb `b` the rest,
documents of 10 consecutive rows with ragsift's 32-hex ids. Built once into --dir (reused when
it holds one). Each round starts one worker process per side (the revision's `src` exported
with `git archive`, and this tree's), the sides alternating which goes first; a worker times,
per case, the thread CPU of each call with the snapshot's filter caches emptied before it (a
whitelist a search has not seen):

- `plan N docs`: `whitelist_plan` of a whitelist of N documents of kb `a` (100, 1,000 and
  half its documents): what BM25 asks of the dense store first for every whitelist of 64
  documents or more (which of the kb's documents it leaves out); `the first on its snapshot`:
  with the kb's documents counted anew, as after each write;
- `search 50 docs`: a dense search (top 30) under a 50-document whitelist.

p50 per side (ms, medians over the rounds), and old / new. Usage:
python benchmarks/whitelist_rows_cost.py --baseline REV [--rows 1000000] [--rounds 4]
    [--queries 200] [--dir DIR] [--replaced 0.4]  (that share of kb `a`'s documents written
    again after the build, as a sync of changed files does: their old rows dead)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_server import export_src
from document_ids import document_id

DIMENSION = 32


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def build(directory: Path, rows: int, replaced: float) -> None:
    from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
    from ragsift.domain.index_records import IndexRecord

    store = DenseMatrixStore(directory, DIMENSION)
    rng = np.random.default_rng(7)
    batch = 10_000
    for lo in range(0, rows, batch):
        numbers = range(lo, min(rows, lo + batch))
        store.upsert([IndexRecord(chunk_id=f"c{i}", document_id=document_id(i // 10, "uuid"),
                                  kb_id="a" if i < rows * 9 // 10 else "b", text="")
                      for i in numbers],
                     rng.standard_normal((len(numbers), DIMENSION)).astype(np.float32))
    # re-ingested whole, in batches of documents as a sync writes them: their old rows die
    documents = rows * 9 // 10 // 10
    again = np.sort(rng.choice(documents, int(documents * replaced), replace=False))
    for lo in range(0, again.size, 1_000):
        numbers = [i for d in again[lo: lo + 1_000].tolist() for i in range(10 * d, 10 * d + 10)]
        store.upsert([IndexRecord(chunk_id=f"c{i}", document_id=document_id(i // 10, "uuid"),
                                  kb_id="a", text="") for i in numbers],
                     rng.standard_normal((len(numbers), DIMENSION)).astype(np.float32))
    store.close()
    (directory / "rows.json").write_text(json.dumps(rows), "utf-8")


def worker(directory: Path, queries: int) -> None:
    """In the side's process: time each case; print one JSON line of p50 ms."""
    from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
    from ragsift.domain.filters import SearchFilter

    rows = json.loads((directory / "rows.json").read_text("utf-8"))  # as built, before --replaced
    store = DenseMatrixStore(directory, DIMENSION)
    documents = rows * 9 // 10 // 10
    rng = np.random.default_rng(11)

    def whitelist(size: int) -> SearchFilter:
        picked = rng.choice(documents, size, replace=False)
        return SearchFilter(kb_id="a", document_ids=frozenset(document_id(int(d), "uuid")
                                                              for d in picked))

    def timed(call: object, filters: list[SearchFilter], first: bool = False) -> float:
        times = []
        for search_filter in filters:
            snap = store._snapshot
            snap.cache.clear()
            snap.complements.clear()
            if first and hasattr(snap, "held"):  # the kb's documents, counted once a snapshot
                snap.held.clear()
            started = time.thread_time_ns()
            call(search_filter)  # type: ignore[operator]
            times.append(time.thread_time_ns() - started)
        return statistics.median(times) / 1e6

    result: dict[str, float] = {}
    for size in (100, 1_000, documents // 2):  # the last: half of kb `a`
        filters = [whitelist(size) for _ in range(max(10, queries // (size // 100 or 1)))]
        result[f"plan {size:,} docs"] = timed(store.whitelist_plan, filters)
    filters = [whitelist(100) for _ in range(max(10, queries // 10))]
    result["plan 100 docs, the first on its snapshot"] = timed(store.whitelist_plan, filters,
                                                               first=True)
    vectors = rng.standard_normal((queries, DIMENSION)).astype(np.float32)
    filters = [whitelist(50) for _ in range(queries)]
    pairs = iter(zip(vectors, filters, strict=True))
    result["search 50 docs"] = timed(lambda f: store.search(next(pairs)[0], f, 30), filters)
    store.close()
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare with")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--replaced", type=float, default=0.0,
                        help="share of kb a's documents written again after the build")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.queries)
        return
    here = Path(__file__).resolve().parents[1] / "src"
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or Path(tmp) / "store"
        if not (directory / "rows.json").exists():
            directory.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            build(directory, args.rows, args.replaced)
            print(f"built {args.rows:,} rows, {args.replaced:.0%} of kb a's documents written "
                  f"again, in {time.perf_counter() - started:.0f} s")
        sides = {"old": export_src(args.baseline, Path(tmp) / "old"), "new": here}
        print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}, "
              f"load {load()}", flush=True)
        found: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for number in range(args.rounds):
            order = ["old", "new"] if number % 2 == 0 else ["new", "old"]
            for side in order:
                out = subprocess.run(
                    [sys.executable, __file__, "--baseline", args.baseline, "--worker",
                     str(directory), "--queries", str(args.queries)],
                    env={**os.environ, "PYTHONPATH": str(sides[side])}, check=True,
                    capture_output=True, text=True).stdout
                found[side].append(json.loads(out.strip().splitlines()[-1]))
        print(f"\n{args.rows:,} rows, {args.rounds} rounds, load {load()} after\n")
        print(f"| case | {args.baseline} p50 ms | this tree p50 ms | old / new |\n"
              "|---|---:|---:|---:|")
        for case in found["new"][0]:
            old = statistics.median(r[case] for r in found["old"])
            new = statistics.median(r[case] for r in found["new"])
            print(f"| {case} | {old:.3f} | {new:.3f} | {old / new:.1f}x |")


if __name__ == "__main__":
    main()
