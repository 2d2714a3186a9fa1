"""What RetrievalService adds over the index: this tree against a git revision, interleaved.

One synthetic KB (search_latency.py's workload: 100k chunks, 5 KBs, random vectors, facts in
SQLite) is built once into --kb-dir. Each round starts one worker process per side (the
revision's `src` exported with `git archive`, read-only on the repository, and this tree),
alternating which goes first; a worker times, per query and filter, the index's own hybrid
(dense + BM25 in a 2-thread pool, RRF; search_latency.py's definition) and
RetrievalService.search wired as bootstrap wires it (versions and tuning from the SQL
repository), query embedding excluded. Wall and process CPU (all threads) per call; the
overhead is service p50 minus index p50 of the same side, filter and channel size.

Usage: python benchmarks/service_overhead.py [--kb-dir DIR] [--baseline HEAD] [--rounds 4]
                                             [--queries 100] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from bench_server import export_src

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
FILTERS = ("kb only", "kb + scope", "kb + 50 docs")
# (name, Settings overrides, channel size of the index baseline)
CONFIGS: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("retrieval", {"top_k": 30, "candidate_k": 30, "channel_k": 30, "small2big": False,
                   "run_faq": False}, 30),
    ("+small2big+faq", {"top_k": 30, "candidate_k": 30, "channel_k": 30}, 30),
    ("shipped defaults", {}, 100),
)


def build(kb_dir: Path, chunks: int) -> None:
    """The index and the facts of search_latency.py's workload, unless already there."""
    if (kb_dir / "built.json").exists():
        return
    from pipeline_cost import load_facts
    from search_latency import BATCH, DIMENSION, KBS, make_workload

    from ragsift.adapters.embedded_index import EmbeddedIndex
    from ragsift.adapters.sql import SqlRepository

    kb_dir.mkdir(parents=True, exist_ok=True)
    _, _, doc_ids, kb_of, records, vectors = make_workload(np.random.default_rng(7), chunks)
    index = EmbeddedIndex(kb_dir / "index", DIMENSION)
    order = sorted(range(chunks), key=lambda i: records[i].kb_id)
    for lo in range(0, chunks, BATCH):
        rows = order[lo : lo + BATCH]
        index.upsert([records[i] for i in rows], vectors[rows])
    index.close()
    repository = SqlRepository(f"sqlite:///{kb_dir / 'facts.sqlite'}")
    load_facts(repository, records, KBS)
    repository.close()
    docs = {kb: [d for d in doc_ids if kb_of[d] == kb] for kb in set(kb_of.values())}
    (kb_dir / "built.json").write_text(json.dumps({"chunks": chunks, "docs": docs}), "utf-8")


def timed(call: Callable[[], object]) -> list[float]:
    """[wall ms, process CPU ms] of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return [(time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000]


class Side:
    """One side's index, facts and queries, opened in its worker process."""

    def __init__(self, kb_dir: Path, queries: int, seed: int) -> None:
        from pipeline_cost import RandomVectorEmbedder
        from search_latency import DIMENSION, build_vocabulary, make_text

        from ragsift.adapters.embedded_index import EmbeddedIndex
        from ragsift.adapters.sql import SqlRepository

        self.docs = json.loads((kb_dir / "built.json").read_text("utf-8"))["docs"]
        self.rng = np.random.default_rng(seed)
        words, probs = build_vocabulary(np.random.default_rng(7))
        self.total = queries + 10  # the first 10 warm the caches
        self.texts = [make_text(self.rng, words, probs, int(self.rng.integers(3, 9)))
                      for _ in range(self.total)]
        self.vecs = self.rng.standard_normal((self.total, DIMENSION), dtype=np.float32)
        self.index = EmbeddedIndex(kb_dir / "index", DIMENSION)
        self.repository = SqlRepository(f"sqlite:///{kb_dir / 'facts.sqlite'}")
        self.embedder = RandomVectorEmbedder(dict(zip(self.texts, self.vecs, strict=True)))
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        self.loop.close()
        self.pool.shutdown()
        self.index.close()
        self.repository.close()

    def scope(self, i: int, kind: str) -> dict[str, Any]:
        """The request fields of query i under filter `kind`."""
        from search_latency import KBS

        kb = f"kb-{i % KBS}"
        if kind == "kb + scope":
            return {"kb_id": kb, "sources": ("manual", "wiki"), "visibilities": ("public",)}
        if kind == "kb + 50 docs":
            picked = self.rng.choice(self.docs[kb], size=min(50, len(self.docs[kb])),
                                     replace=False)
            return {"kb_id": kb, "document_ids": tuple(sorted(str(d) for d in picked))}
        return {"kb_id": kb}

    def hybrid(self, i: int, flt: Any, channel: int) -> object:
        """The index alone: dense and BM25 in two threads, RRF (search_latency.py's hybrid)."""
        from search_latency import fuse

        dense = self.pool.submit(self.index.search_dense, self.vecs[i], flt, channel)
        sparse = self.pool.submit(self.index.search_sparse, self.texts[i], flt, channel)
        return fuse(dense.result(), sparse.result(), channel)

    def cell(self, service: Any, kind: str, channel: int) -> dict[str, list[list[float]]]:
        """Index and service samples of every query under one filter."""
        from ragsift.domain.filters import SearchFilter
        from ragsift.domain.requests import SearchRequest

        cells: dict[str, list[list[float]]] = {"index": [], "service": []}
        for i in range(self.total):
            values = self.scope(i, kind)
            flt = SearchFilter(kb_id=values["kb_id"], version_seq=0, **{
                k: frozenset(v) for k, v in values.items() if k != "kb_id"})
            request = SearchRequest(query=self.texts[i], **values)
            index_sample = timed(lambda: self.hybrid(i, flt, channel))  # noqa: B023
            service_sample = timed(
                lambda: self.loop.run_until_complete(service.search(request)))  # noqa: B023
            if i >= 10:
                cells["index"].append(index_sample)
                cells["service"].append(service_sample)
        return cells


def worker(kb_dir: Path, queries: int, seed: int) -> dict[str, Any]:
    """Samples of one side: {config: {filter: {index|service: [[wall ms, cpu ms], ...]}}}."""
    from ragsift.config import Settings
    from ragsift.retrieval.service import RetrievalService

    side = Side(kb_dir, queries, seed)
    out: dict[str, Any] = {}
    try:
        for name, overrides, channel in CONFIGS:
            settings = Settings(data_dir=Path("unused"), **overrides)
            service = RetrievalService(side.repository, side.index, side.embedder, settings,
                                       tuning=side.repository, versions=side.repository)
            out[name] = {kind: side.cell(service, kind, channel) for kind in FILTERS}
    finally:
        side.close()
    return out


def run_side(src: Path, kb_dir: Path, queries: int, seed: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{BENCH}"}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--kb-dir", str(kb_dir), "--queries",
         str(queries), "--seed", str(seed)], env=env, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def p50(samples: list[list[float]], column: int) -> float:
    return statistics.median(s[column] for s in samples)


def report(results: dict[str, list[dict[str, Any]]], sides: list[str], rounds: int,
           queries: int, loads: list[float], revision: str) -> str:
    lines = [
        f"date {time.strftime('%Y-%m-%d %H:%M')}; machine: {len(os.sched_getaffinity(0))} "
        f"CPUs (nproc), {platform.processor() or platform.machine()}; Python "
        f"{platform.python_version()}; load average {loads[0]:.2f} at start, "
        f"{statistics.median(loads):.2f} median over rounds, {loads[-1]:.2f} at the end",
        f"{rounds} rounds x {queries} queries per filter, sides alternated; `{revision}` = "
        "the baseline's src, `tree` = this working tree; p50 of wall and of process CPU "
        "(ms per call); overhead = service p50 - index p50 of the same side",
        "",
        "| config | filter | side | index wall | index CPU | service wall | service CPU "
        "| overhead wall | overhead CPU |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, _, _ in CONFIGS:
        for kind in FILTERS:
            for side in sides:
                index = [s for part in results[side] for s in part[name][kind]["index"]]
                service = [s for part in results[side] for s in part[name][kind]["service"]]
                iw, ic, sw, sc = p50(index, 0), p50(index, 1), p50(service, 0), p50(service, 1)
                lines.append(f"| {name} | {kind} | {side} | {iw:.2f} | {ic:.2f} | {sw:.2f} | "
                             f"{sc:.2f} | {sw - iw:.2f} | {sc - ic:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb-dir", type=Path, default=Path(tempfile.gettempdir()) / "svc-kb")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--baseline", default="HEAD",
                        help="git revision, or a directory holding a `ragsift` package tree "
                        "(say, this tree without one change), to compare with")
    parser.add_argument("--baseline-name", help="its name in the table")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.kb_dir, args.queries, args.seed)))
        return
    build(args.kb_dir, args.chunks)
    with tempfile.TemporaryDirectory() as tmp:
        given = Path(args.baseline)
        old = given if given.is_dir() else export_src(args.baseline, Path(tmp) / "old")
        sources = {args.baseline_name or args.baseline: old, "tree": ROOT / "src"}
        sides = list(sources)
        results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        loads = [os.getloadavg()[0]]
        for r in range(args.rounds):
            for side in sides if r % 2 == 0 else sides[::-1]:
                results[side].append(run_side(sources[side], args.kb_dir, args.queries, r))
                loads.append(os.getloadavg()[0])
    text = report(results, sides, args.rounds, args.queries, loads, sides[0])
    print(text)
    if args.output:
        args.output.write_text(text, "utf-8")


if __name__ == "__main__":
    main()
