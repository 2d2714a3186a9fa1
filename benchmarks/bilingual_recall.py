"""Questions across languages in a mixed KB (issue 34, item 6): recall@3 of the answer's chunk.

The KB: the six documents of benchmarks/data/bilingual/ (three Chinese, three English, our own
text); the questions: benchmarks/data/bilingual/questions.tsv - Chinese questions about the
English documents (zh-en), English ones about the Chinese documents (en-zh) and same-language
controls (zh-zh, en-en). A question is answered at rank r when the r-th hit of the service's
search (RetrievalService, as bootstrap wires it, no LLM) is a chunk of its document holding
its fact phrase.

Configurations, over one ingested KB: `before` (RAGSIFT_CROSS_LINGUAL_MIXED_SHARE=1: the second
dense channel only for a query in the KB's minority script, as before this change), `after`
(the defaults), and any `--extra NAME:SETTING=VALUE,...`. Searches alternate configuration by
question (the order reversed every other question) after one warm-up search each, without a
query-vector cache; wall and CPU (process time, every thread) per search.

    python benchmarks/bilingual_recall.py [--data-dir DIR] [--rounds 1] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.bootstrap import Container, build, build_rewriter
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.evaluation.bootstrap_ci import paired_bootstrap
from ragsift.retrieval.consistency_stage import ConsistencyStage
from ragsift.retrieval.service import RetrievalService

DATA = Path(__file__).resolve().parent / "data" / "bilingual"
DIRECTIONS = ("zh-en", "en-zh", "zh-zh", "en-en")


@dataclass(frozen=True, slots=True)
class Question:
    direction: str  # query language - answer language
    document: str
    fact: str
    query: str


def questions(path: Path = DATA / "questions.tsv") -> list[Question]:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text("utf-8").splitlines()
            if line.strip() and not line.startswith("#")]
    return [Question(*row) for row in rows]


def documents() -> list[Path]:
    return sorted(DATA.glob("*.md"))


def ingest(container: Container, kb_name: str = "bilingual") -> str:
    kb = container.ingestion.ensure_kb(kb_name)
    if not container.repository.list_documents(kb.id):
        for path in documents():
            outcome = container.ingestion.ingest_path(kb, path)
            if outcome.document.error is not None:
                raise RuntimeError(f"{path.name}: {outcome.document.error}")
    return kb.id


def answer_rank(hits: Iterable[Any], question: Question) -> int | None:
    """The rank of the first hit from the question's document holding its fact."""
    for rank, hit in enumerate(hits, start=1):
        if hit.filename == question.document and question.fact in hit.text:
            return rank
    return None


def service(container: Container, settings: Settings) -> RetrievalService:
    """The service as bootstrap wires it, with `settings`, over the container's stores."""
    return RetrievalService(
        container.repository, container.index, container.embedder, settings,
        rewriter=build_rewriter(settings), faq_index=container.faq_index,
        tuning=container.repository, versions=container.repository,
        rescorers=(ConsistencyStage(settings, getattr(
            container.index, "sparse_term_stats", None)),),
    )


def search(retrieval: RetrievalService, kb_id: str, query: str, top_k: int = 10
           ) -> tuple[list[Any], float, float]:
    """(hits, wall ms, CPU ms) of one search."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(retrieval.search(SearchRequest(query=query, kb_id=kb_id, top_k=top_k)))
    return (list(result.hits), (time.perf_counter() - wall) * 1000,
            (time.process_time() - cpu) * 1000)


def _settings(spec: str) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for pair in filter(None, spec.split(",")):
        key, _, value = pair.partition("=")
        overrides[key] = value
    return overrides


def run(data_dir: Path, configs: dict[str, dict[str, Any]], items: Sequence[Question],
        rounds: int) -> dict[str, dict[str, Any]]:
    """Per configuration: the answer's rank per question and the search costs."""
    # no query-vector cache: the second configuration to search a question would find its
    # e5 vector cached and look cheaper
    container = build(Settings(data_dir=data_dir, query_cache_size=0))
    try:
        kb_id = ingest(container)
        services = {name: service(container, Settings(data_dir=data_dir, **over))
                    for name, over in configs.items()}
        results: dict[str, dict[str, Any]] = {
            name: {"ranks": [], "wall": [], "cpu": []} for name in configs}
        for retrieval in services.values():  # warm-up: models loaded, samples cached
            search(retrieval, kb_id, items[0].query)
        for _ in range(rounds):
            for position, question in enumerate(items):
                order = list(services.items())
                for name, retrieval in order if position % 2 else order[::-1]:
                    hits, wall, cpu = search(retrieval, kb_id, question.query)
                    results[name]["wall"].append(wall)
                    results[name]["cpu"].append(cpu)
                    if len(results[name]["ranks"]) < len(items):
                        results[name]["ranks"].append(answer_rank(hits, question))
        return results
    finally:
        container.close()


def report(results: dict[str, dict[str, Any]], items: Sequence[Question]) -> str:
    lines = ["| configuration | " + " | ".join(f"{d} recall@3 (n)" for d in DIRECTIONS)
             + " | MRR@10 cross-lingual | p50 wall / CPU ms: zh questions | en questions |",
             "|---" * 8 + "|"]
    for name, result in results.items():
        cells = []
        for direction in DIRECTIONS:
            ranks = [r for r, q in zip(result["ranks"], items, strict=True)
                     if q.direction == direction]
            cells.append(f"{_recall(ranks):.3f} ({len(ranks)})")
        cross = [r for r, q in zip(result["ranks"], items, strict=True)
                 if q.direction in ("zh-en", "en-zh")]
        mrr = statistics.fmean(1 / r if r else 0.0 for r in cross)
        costs = [_p50(result, items, language) for language in ("zh", "en")]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {mrr:.3f} | "
                     + " | ".join(costs) + " |")
    names = list(results)
    for name in names[1:]:
        for direction in (*DIRECTIONS, "cross-lingual"):
            chosen = [i for i, q in enumerate(items) if q.direction == direction
                      or (direction == "cross-lingual" and q.direction in ("zh-en", "en-zh"))]
            base = [_hit(results[names[0]]["ranks"][i]) for i in chosen]
            new = [_hit(results[name]["ranks"][i]) for i in chosen]
            lines.append(f"- {name} - {names[0]}, {direction} recall@3: "
                         f"{paired_bootstrap(base, new).label()}")
    misses = [f"  {name} {q.direction} {q.query} -> {r}" for name, result in results.items()
              for r, q in zip(result["ranks"], items, strict=True) if not r or r > 3]
    return "\n".join([*lines, "misses (rank, - = not in the top 10):", *misses])


def _p50(result: dict[str, Any], items: Sequence[Question], language: str) -> str:
    """p50 wall / CPU ms of the searches of the questions in `language` (every round)."""
    chosen = [i for i in range(len(result["wall"]))
              if items[i % len(items)].direction.startswith(language)]
    wall = statistics.median(result["wall"][i] for i in chosen)
    cpu = statistics.median(result["cpu"][i] for i in chosen)
    return f"{wall:.1f} / {cpu:.1f}"


def _hit(rank: int | None) -> float:
    return 1.0 if rank is not None and rank <= 3 else 0.0


def _recall(ranks: Sequence[int | None]) -> float:
    return statistics.fmean(_hit(r) for r in ranks) if ranks else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--extra", action="append", default=[],
                        help="NAME:SETTING=VALUE,... another configuration")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    configs: dict[str, dict[str, Any]] = {
        "before": {"cross_lingual_mixed_share": 1.0}, "after": {}}
    for extra in args.extra:
        name, _, spec = extra.partition(":")
        configs[name] = _settings(spec)
    items = questions()
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir or Path(scratch) / "data"
        started = time.perf_counter()
        results = run(data_dir, configs, items, args.rounds)
    text = report(results, items) + f"\n({time.perf_counter() - started:.0f} s)"
    print(text)
    if args.output is not None:
        args.output.write_text(text + "\n", "utf-8")


if __name__ == "__main__":
    sys.exit(main())
