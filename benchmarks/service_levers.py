"""Per-query cost of the issue-18 levers through RetrievalService, interleaved per query.

Configurations: hybrid z-score (base), + consistency re-scoring, + RM3 feedback, + both;
each query runs every configuration, the order rotating per query, after one warm-up pass.
Reports wall and CPU milliseconds per query (mean, p50, p95), the ratio to the base, how
often each lever applied, and the load average before and after.

Needs a data dir holding a KB built by `ragsift eval DATASET --data-dir DIR` (read only).
Usage: python service_levers.py DATA_DIR DATASET_DIR [--kb eval-afqmc-faq] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.domain.trace import RetrievalTrace

CONFIGS: dict[str, dict[str, bool]] = {
    "base": {},
    "consistency": {"consistency": True},
    "feedback": {"feedback": True},
    "both": {"consistency": True, "feedback": True},
}


def _queries(dataset: Path, limit: int) -> list[str]:
    lines = (dataset / "queries.dev.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:limit]]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--kb", default=None)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    kb_name = args.kb or f"eval-{args.dataset.name}"
    container = build(Settings(data_dir=args.data_dir, llm_base_url=None, reranker="none"))
    kb = container.repository.get_kb_by_name(kb_name)
    assert kb is not None, f"no KB {kb_name} in {args.data_dir}"
    queries = _queries(args.dataset, args.queries)
    wall: dict[str, list[float]] = {name: [] for name in CONFIGS}
    cpu: dict[str, list[float]] = {name: [] for name in CONFIGS}
    applied: dict[str, int] = {"consistency": 0, "feedback": 0, "feedback_skipped": 0}
    load_before = os.getloadavg()

    def run(query: str, fields: dict[str, bool]) -> tuple[float, float, RetrievalTrace]:
        request = SearchRequest(query=query, kb_id=kb.id, mode="hybrid", fusion="zscore",
                                run_faq=False, small2big=False, rewrite=False, rerank=False,
                                top_k=10, consistency=fields.get("consistency", False),
                                feedback=fields.get("feedback", False))
        start, start_cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(container.retrieval.search(request))
        return ((time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000,
                result.trace)

    try:
        for query in queries[:20]:  # warm-up: caches, tantivy searchers, e5 session
            run(query, {})
        names = list(CONFIGS)
        for index, query in enumerate(queries):
            for name in names[index % len(names):] + names[: index % len(names)]:
                ms, cpu_ms, trace = run(query, CONFIGS[name])
                wall[name].append(ms)
                cpu[name].append(cpu_ms)
                if name == "both":
                    applied["consistency"] += trace.consistency.detail.get("penalised", 0) != 0
                    status = trace.feedback.status
                    applied["feedback"] += status == "applied"
                    applied["feedback_skipped"] += status == "skipped"
    finally:
        container.close()
    load_after = os.getloadavg()
    base_wall, base_cpu = statistics.mean(wall["base"]), statistics.mean(cpu["base"])
    print(f"{len(queries)} queries, KB {kb_name}; load average before {load_before[0]:.2f}, "
          f"after {load_after[0]:.2f}")
    print("| config | wall ms mean | p50 | p95 | CPU ms mean | wall x base | CPU x base |")
    print("|---|---|---|---|---|---|---|")
    for name in CONFIGS:
        w, c = wall[name], cpu[name]
        print(f"| {name} | {statistics.mean(w):.2f} | {_pct(w, 0.5):.2f} | {_pct(w, 0.95):.2f} "
              f"| {statistics.mean(c):.2f} | {statistics.mean(w) / base_wall:.2f} "
              f"| {statistics.mean(c) / base_cpu:.2f} |")
    print(f"queries with a penalised candidate: {applied['consistency']}; feedback applied "
          f"{applied['feedback']}, skipped over budget {applied['feedback_skipped']}")


if __name__ == "__main__":
    main()
