"""What the metadata heal costs at a writer's start (ingest, sync, reindex, serve), with and
without the note of the last agreement (adapters/embedded_index/bm25_metadata_check.py).

Reuses a build of metadata_filter_scale.py (`--dir DIR`: KB `a`, 10k documents / 100k chunks;
KB `b`, 2k / 20k; metadata in the facts and as the index's terms, nothing stale). Each round
times `heal_stale_metadata` for each KB twice, each time on the index and the facts opened
anew as a starting process opens them: with the note removed first (the whole check: every
document's metadata from the facts, the index's fingerprints, the comparison), then with the
note the first wrote (the facts' stamp and the index's opstamp compared). Wall and process
CPU, medians over rounds.

Usage: python benchmarks/metadata_heal_cost.py --dir DIR [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
from ragsift.adapters.embedded_index.bm25_metadata_check import CHECK_FILE
from ragsift.adapters.sql import SqlRepository
from ragsift.ingestion.metadata_refresh import heal_stale_metadata

DIMENSION = 384


def timed(call: Callable[[], int]) -> tuple[float, float, int]:
    """(wall s, CPU s, chunks rewritten) of one heal."""
    wall, cpu = time.perf_counter(), time.process_time()
    chunks = call()
    return time.perf_counter() - wall, time.process_time() - cpu, int(chunks)


def fresh_heal(directory: Path, kb: str) -> tuple[float, float, int]:
    """One heal of `kb` as a process starting would run it: the index and the facts opened
    first (not timed), so no cache of an earlier heal answers."""
    index = EmbeddedIndex(directory / "index", DIMENSION)
    repository = SqlRepository(f"sqlite:///{directory / 'facts.sqlite'}")
    try:
        return timed(partial(heal_stale_metadata, repository, index, kb))
    finally:
        index.close()
        repository.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    samples: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    for _ in range(args.rounds):
        for kb in ("a", "b"):
            note = args.dir / "index" / "sparse" / kb_directory_name(kb) / CHECK_FILE
            note.unlink(missing_ok=True)
            for case in ("whole check (no note)", "note holds"):
                samples.setdefault((kb, case), []).append(fresh_heal(args.dir, kb))
    print(f"\n| KB | case | wall s (median) | CPU s (median) | chunks rewritten |  "
          f"(load {os.getloadavg()[0]:.2f})")
    print("|---|---|---:|---:|---:|")
    for (kb, case), rows in samples.items():
        print(f"| {kb} | {case} | {statistics.median(r[0] for r in rows):.3f} "
              f"| {statistics.median(r[1] for r in rows):.3f} | {max(r[2] for r in rows)} |")


if __name__ == "__main__":
    main()
