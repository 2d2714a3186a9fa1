"""An evaluation's outcome as a rich table, JSON, a markdown table and TREC run files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from ragsift.evaluation.corpus_index import IndexBuild
from ragsift.evaluation.runner import ConfigResult

METRIC_LABELS = (("ndcg", "nDCG"), ("mrr", "MRR"), ("recall", "R"), ("precision", "P"))


@dataclass(frozen=True)
class EmbedderRates:
    """Embedding throughput: the whole pipeline against the bare embedder."""

    model_id: str
    batch_size: int
    embedded: int | None  # passages the cache did not have in this run
    alone_per_s: float | None  # the bare embedder on a sample, cache bypassed
    sample: int


@dataclass(frozen=True)
class EvalReport:
    """Everything one `ragsift eval` run measured."""

    dataset: str
    queries_loaded: int
    queries_judged: int
    k: int
    ks: tuple[int, ...]
    channel_k: int
    depth: int
    index: IndexBuild
    embedder: EmbedderRates
    results: tuple[ConfigResult, ...]
    stages: dict[str, str] = field(default_factory=dict)
    run_files: dict[str, str] = field(default_factory=dict)


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _columns(report: EvalReport) -> list[tuple[str, str]]:
    """(metric key, label) of the table: the four metrics at k, and R@100 when measured."""
    columns = [(f"{key}@{report.k}", f"{label}@{report.k}") for key, label in METRIC_LABELS]
    if 100 in report.ks and report.k != 100:
        columns.append(("recall@100", "R@100"))
    return columns


def _index_line(report: EvalReport) -> str:
    build, rates = report.index, report.embedder
    if not build.built:
        return (f"index: reused knowledge base {build.kb_name} ({build.passages} passages, "
                f"layout {build.layout}); nothing embedded")
    line = (f"index: {build.built} passages ({build.chunks_built} chunks) in {build.seconds:.1f}s"
            f" = {build.passages_per_s or 0:.1f} passages/s")
    if rates.alone_per_s:
        line += f"; embedder alone {rates.alone_per_s:.1f} passages/s"
    if build.reused:
        line += f"; {build.reused} reused"
    return line


def to_json(report: EvalReport) -> dict[str, Any]:
    """The machine-readable report: all metrics at every k, latencies, index build, stages."""
    build = report.index
    return {
        "dataset": report.dataset,
        "kb": {"id": build.kb_id, "name": build.kb_name, "layout": build.layout,
               "fingerprint": build.fingerprint},
        "queries": {"loaded": report.queries_loaded, "judged": report.queries_judged},
        "k": report.k, "ks": list(report.ks), "channel_k": report.channel_k,
        "top_k": report.depth,
        "index": {
            "passages": build.passages, "reused": build.reused, "built": build.built,
            "removed": build.removed, "chunks_built": build.chunks_built,
            "chunks_over_model_window": build.over_model_window,
            "seconds": round(build.seconds, 3), "passages_per_s": _round(build.passages_per_s, 2),
            "timings_s": build.timings_s, "embedder": report.embedder.model_id,
            "embed_batch": report.embedder.batch_size, "embedded": report.embedder.embedded,
            "embedder_alone_passages_per_s": _round(report.embedder.alone_per_s, 2),
            "embedder_sample": report.embedder.sample,
        },
        "stages": report.stages,
        "configs": [
            {
                "name": r.config.name, "mode": r.config.mode, "fusion": r.config.fusion,
                "metrics": {name: round(value, 6) for name, value in r.means.items()},
                "latency_ms": {"p50": _round(r.latency_ms(50), 2),
                               "p95": _round(r.latency_ms(95), 2)},
                "queries_scored": len(r.per_query), "failed_queries": r.failed_queries,
                "degraded_queries": r.degraded_queries,
            }
            for r in report.results
        ],
        "run_files": report.run_files,
    }


def render_table(console: Console, report: EvalReport) -> None:
    """One row per configuration at the report's k, with latency; index and stage notes below."""
    columns = _columns(report)
    troubled = any(r.failed_queries or r.degraded_queries for r in report.results)
    table = Table(title=f"{report.dataset}: {report.queries_judged} judged queries "
                        f"(of {report.queries_loaded}), {report.index.passages} passages",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("config", no_wrap=True)
    for _, label in columns:
        table.add_column(label, justify="right", no_wrap=True)
    extra = ("p50 ms", "p95 ms", *(("failed", "degraded") if troubled else ()))
    for label in extra:
        table.add_column(label, justify="right", no_wrap=True)
    for result in report.results:
        p50, p95 = result.latency_ms(50), result.latency_ms(95)
        cells = [result.config.name, *(f"{result.means.get(key, 0.0):.4f}" for key, _ in columns),
                 "-" if p50 is None else f"{p50:.1f}", "-" if p95 is None else f"{p95:.1f}"]
        if troubled:
            cells += [str(len(result.failed_queries)), str(result.degraded_queries)]
        table.add_row(*cells)
    console.print(table)
    console.print(_index_line(report))
    for stage, note in report.stages.items():
        console.print(f"{stage}: {note}")
    for name, path in report.run_files.items():
        console.print(f"run {name}: {path}")


def to_markdown(report: EvalReport) -> str:
    """A GitHub markdown table of the configurations at the report's k, with latency."""
    columns = _columns(report)
    header = ["config", *(label for _, label in columns), "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in report.results:
        p50, p95 = result.latency_ms(50), result.latency_ms(95)
        cells = [result.config.name, *(f"{result.means.get(k, 0.0):.3f}" for k, _ in columns),
                 "-" if p50 is None else f"{p50:.1f}", "-" if p95 is None else f"{p95:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_trec_run(path: Path, result: ConfigResult, tag: str) -> int:
    """Write `qid Q0 docid rank score tag` lines, ranks from 1; returns the line count.

    Scores are the retrieval's own (fusion or raw channel score); trec_eval re-sorts by score,
    so on exact ties its order may differ from the rank column, which is the one scored here.
    """
    lines = [
        f"{qid} Q0 {doc.corpus_id} {rank} {doc.score:.6f} {tag}"
        for qid, docs in result.runs.items()
        for rank, doc in enumerate(docs, start=1)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def run_paths(path: Path, names: Sequence[str]) -> dict[str, Path]:
    """One run file per configuration: `path` itself for one, `stem.<name><suffix>` for several."""
    if len(names) == 1:
        return {names[0]: path}
    return {name: path.with_name(f"{path.stem}.{name}{path.suffix}") for name in names}
