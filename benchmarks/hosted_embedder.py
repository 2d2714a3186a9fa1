"""A hosted embedder at the provider's pace (issue 39, item 2): concurrent batches and a budget.

The provider is tests/support/llm_server.py run as a process, an OpenAI-compatible
/v1/embeddings that answers after a fixed latency (150 ms a call by default: a hosted
embedder's round trip) and logs every request it receives. Three measurements:

- `alone`: OpenAIEmbedder.embed_passages over N synthetic bilingual texts, batches of 16, at
  concurrency 1 (batch after batch, as before) and at concurrency C (8), interleaved by round;
- `ingest`: the same texts as one-line documents through `bootstrap.build` and
  `process_many` (as `ragsift ingest` runs them), RAGSIFT_OPENAI_EMBEDDING_CONCURRENCY 1 vs C;
- `budget`: concurrency C under a requests and a tokens budget on a short window (the
  per-minute settings scaled down so the run takes seconds): the most requests and tokens
  the server received in any window, against the budget.

Reported: embeddings per wall second (median of the rounds), the ratio C / 1, and this
process's CPU seconds (threads and preparation workers included; the server's are not).

Usage: python benchmarks/hosted_embedder.py [--texts 768] [--docs 256] [--rounds 3]
       [--latency 0.15] [--concurrency 8] [--output /tmp/hosted_embedder.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.adapters.rate_budget import RateBudget
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from support.fixtures import LLMServer, run_llm_server

BATCH = 16
Run = dict[str, float]


def texts(count: int) -> list[str]:
    """Distinct short passages, half Chinese, half English (the server's work is per text)."""
    return [
        f"第{i}条：员工出差住宿标准为每晚{300 + i % 400}元，须保留发票。" if i % 2 else
        f"Policy line {i}: the hotel limit is {100 + i % 300} dollars a night; keep the invoice."
        for i in range(count)
    ]


def cpu_s() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def measured(work: Callable[[], int]) -> Run:
    cpu, wall = cpu_s(), time.perf_counter()
    count = work()
    wall = time.perf_counter() - wall
    return {"count": count, "wall_s": wall, "cpu_s": cpu_s() - cpu, "rate": count / wall,
            "load": os.getloadavg()[0]}


def alone(server: LLMServer, tokenizer: E5Tokenizer, items: list[str], concurrency: int) -> Run:
    embedder = OpenAIEmbedder(f"{server.url}/v1", "fake-e5", tokenizer, dimension=384,
                              concurrency=concurrency, batch_size=BATCH)
    try:
        return measured(lambda: len(embedder.embed_passages(items)))
    finally:
        embedder.close()


def ingest(server: LLMServer, items: list[str], concurrency: int) -> Run:
    with tempfile.TemporaryDirectory(prefix="hosted_embedder_") as data_dir:
        settings = Settings(
            data_dir=Path(data_dir), embedder="openai", openai_base_url=f"{server.url}/v1",
            openai_embedding_dim=384, openai_embedding_concurrency=concurrency,
            embedding_batch_size=BATCH, second_dense="off",
        )

        def work() -> int:
            container = build(settings)
            try:
                kb = container.ingestion.ensure_kb("bench")
                ids = [container.ingestion.accept(kb, f"d{i}.txt", f"{text}\n".encode())
                       .document.id for i, text in enumerate(items)]
                outcomes = list(container.ingestion.process_many(ids))
            finally:
                container.close()
            ready = sum(o.document.status == DocumentStatus.READY for o in outcomes)
            assert ready == len(items), f"{ready} of {len(items)} documents READY"
            return ready

        run = measured(work)
        requests = server.embedding_log()["requests"]
        # the server's busy span: first arrival to last answer (the rest is the ingest's own)
        run["span_s"] = max(r["done"] for r in requests) - min(r["t"] for r in requests)
        return run


def most_in_window(requests: list[dict[str, Any]], window_s: float, key: str) -> int:
    """The most requests (key "n") or tokens arriving within any window of `window_s`."""
    arrivals = sorted((r["t"], 1 if key == "n" else int(r[key])) for r in requests)
    return max(sum(size for t, size in arrivals if start <= t < start + window_s)
               for start, _ in arrivals)


def budget_run(server: LLMServer, tokenizer: E5Tokenizer, items: list[str], concurrency: int,
               window_s: float, requests: int, tokens: int) -> dict[str, Any]:
    server.reset()
    server.control(embeddings={"latency_s": 0.0, "count_tokens": True})
    warm = OpenAIEmbedder(f"{server.url}/v1", "fake-e5", tokenizer, dimension=384)
    warm.embed_passages(items[:1])  # the server loads its tokenizer outside the measurement
    warm.close()
    server.reset()
    server.control(embeddings={"latency_s": LATENCY, "count_tokens": True})
    embedder = OpenAIEmbedder(
        f"{server.url}/v1", "fake-e5", tokenizer, dimension=384, concurrency=concurrency,
        batch_size=BATCH, budget=RateBudget(requests, tokens, window_s),
    )
    try:
        run = measured(lambda: len(embedder.embed_passages(items)))
    finally:
        embedder.close()
    log = server.embedding_log()["requests"]
    return {**run, "requests": len(log), "max_requests": most_in_window(log, window_s, "n"),
            "max_tokens": most_in_window(log, window_s, "tokens"),
            "total_tokens": sum(int(r["tokens"]) for r in log)}


LATENCY = 0.15


def main() -> None:
    global LATENCY
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=768)
    parser.add_argument("--docs", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.15)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--budget-window", type=float, default=2.0)
    parser.add_argument("--budget-requests", type=int, default=8)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    LATENCY = args.latency
    tokenizer = E5Tokenizer()
    items = texts(args.texts)
    tokenizer.count_tokens(items[0])  # the vocabulary loaded outside the timings
    runs: dict[str, list[Run]] = {}
    with tempfile.TemporaryDirectory() as log_dir, \
            run_llm_server(Path(log_dir) / "server.log") as server:
        for round_no in range(args.rounds):
            order = [1, args.concurrency] if round_no % 2 == 0 else [args.concurrency, 1]
            for concurrency in order:
                server.reset()
                server.control(embeddings={"latency_s": args.latency})
                runs.setdefault(f"alone c{concurrency}", []).append(
                    alone(server, tokenizer, items, concurrency))
                if args.docs:
                    server.reset()
                    server.control(embeddings={"latency_s": args.latency})
                    runs.setdefault(f"ingest c{concurrency}", []).append(
                        ingest(server, items[: args.docs], concurrency))
        # the tokens budget binds as often as the requests one: 8 batches' tokens a window
        batch_tokens = sum(tokenizer.count_tokens(t) for t in items[:BATCH])
        budget = budget_run(server, tokenizer, items, args.concurrency, args.budget_window,
                            args.budget_requests, args.budget_requests * batch_tokens)
        budget["budget_tokens"] = args.budget_requests * batch_tokens
    report = render(args, runs, budget)
    print(report)
    if args.output:
        args.output.write_text(report, encoding="utf-8")


def render(args: argparse.Namespace, runs: dict[str, list[Run]], budget: dict[str, Any]) -> str:
    def median(name: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name])

    lines = [
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, nproc "
        f"{os.cpu_count()}, Python {platform.python_version()}, latency "
        f"{args.latency * 1000:.0f} ms a call, batches of {BATCH}, {args.rounds} rounds "
        f"interleaved, load {min(r['load'] for v in runs.values() for r in v):.1f}-"
        f"{max(r['load'] for v in runs.values() for r in v):.1f}",
        "",
        "| run | texts | wall s (median) | embeddings/s | x sequential | CPU s | CPU ms/text "
        "| embedding span s | embeddings/s in it | x sequential |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in runs:
        kind = name.split()[0]
        base = median(f"{kind} c1", "rate")
        count = int(median(name, "count"))
        lines.append(
            f"| {name} | {count} | {median(name, 'wall_s'):.2f} | {median(name, 'rate'):.0f} | "
            f"{median(name, 'rate') / base:.2f} | {median(name, 'cpu_s'):.2f} | "
            f"{1000 * median(name, 'cpu_s') / count:.2f} | " + (
                f"{median(name, 'span_s'):.2f} | {count / median(name, 'span_s'):.0f} | "
                f"{median(f'{kind} c1', 'span_s') / median(name, 'span_s'):.2f} |"
                if kind == "ingest" else "- | - | - |")
        )
    allowed = args.budget_requests / args.budget_window
    lines += [
        "",
        f"Budget, concurrency {args.concurrency}: {args.budget_requests} requests and "
        f"{budget['budget_tokens']} tokens per {args.budget_window:g} s window; "
        f"{budget['requests']} requests ({budget['total_tokens']} tokens) in "
        f"{budget['wall_s']:.2f} s = {budget['requests'] / budget['wall_s']:.2f} requests/s "
        f"(budget {allowed:.2f}/s). Server-counted most in any window: "
        f"{budget['max_requests']} requests (budget {args.budget_requests}), "
        f"{budget['max_tokens']} tokens (budget {budget['budget_tokens']}).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
