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
from ragsift.evaluation.fusion_statement import FusionStatement
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
class LiveKb:
    """A knowledge base evaluated as it is (`ragsift eval --kb`): read, never written."""

    id: str
    name: str
    documents: int  # READY documents
    version: int | None  # the version searched (None: the KB has no versions)
    labels: str  # the labels file
    chunk_judged: int  # queries with chunk labels, also scored on chunks


@dataclass(frozen=True)
class EvalReport:
    """Everything one `ragsift eval` run measured; `index` for a built corpus, `live` else."""

    dataset: str
    queries_loaded: int
    queries_judged: int
    k: int
    ks: tuple[int, ...]
    channel_k: int
    depth: int
    index: IndexBuild | None
    embedder: EmbedderRates
    results: tuple[ConfigResult, ...]
    stages: dict[str, str] = field(default_factory=dict)
    run_files: dict[str, str] = field(default_factory=dict)
    fusion: FusionStatement | None = None
    live: LiveKb | None = None


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _columns(report: EvalReport) -> list[tuple[str, str]]:
    """(metric key, label) of the table: the four metrics at k, and R@100 when measured."""
    columns = [(f"{key}@{report.k}", f"{label}@{report.k}") for key, label in METRIC_LABELS]
    if 100 in report.ks and report.k != 100:
        columns.append(("recall@100", "R@100"))
    return columns


def _index_line(report: EvalReport) -> str:
    build, rates, live = report.index, report.embedder, report.live
    if build is None:
        if live is None:
            return "index: -"
        version = "no versions" if live.version is None else f"version {live.version}"
        return (f"knowledge base {live.name} (live, {version}): {live.documents} READY "
                f"documents, read only; labels {live.labels}")
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


def _index_json(report: EvalReport) -> dict[str, Any] | None:
    build = report.index
    if build is None:
        return None
    return {
        "passages": build.passages, "reused": build.reused, "built": build.built,
        "removed": build.removed, "chunks_built": build.chunks_built,
        "chunks_over_model_window": build.over_model_window,
        "seconds": round(build.seconds, 3), "passages_per_s": _round(build.passages_per_s, 2),
        "timings_s": build.timings_s, "embedder": report.embedder.model_id,
        "embed_batch": report.embedder.batch_size, "embedded": report.embedder.embedded,
        "embedder_alone_passages_per_s": _round(report.embedder.alone_per_s, 2),
        "embedder_sample": report.embedder.sample,
    }


def _kb_json(report: EvalReport) -> dict[str, Any]:
    build, live = report.index, report.live
    if live is not None:
        return {"id": live.id, "name": live.name, "live": True, "documents": live.documents,
                "version": live.version, "labels": live.labels,
                "chunk_judged_queries": live.chunk_judged}
    if build is None:
        raise ValueError("a report has an index build or a live knowledge base")
    return {"id": build.kb_id, "name": build.kb_name, "layout": build.layout,
            "fingerprint": build.fingerprint, "live": False}


def _config_json(result: ConfigResult) -> dict[str, Any]:
    value: dict[str, Any] = {
        "name": result.config.name, "mode": result.config.mode, "fusion": result.config.fusion,
        "fusion_source": result.config.fusion_source,
        "metrics": {name: round(v, 6) for name, v in result.means.items()},
        "latency_ms": {"p50": _round(result.latency_ms(50), 2),
                       "p95": _round(result.latency_ms(95), 2)},
        "queries_scored": len(result.per_query), "failed_queries": result.failed_queries,
        "degraded_queries": result.degraded_queries,
        "tuned_fusion_applied": result.tuned_applied,
    }
    if result.chunk_per_query:
        value["chunk_metrics"] = {name: round(v, 6) for name, v in result.chunk_means.items()}
        value["chunk_queries_scored"] = len(result.chunk_per_query)
    return value


def to_json(report: EvalReport) -> dict[str, Any]:
    """The machine-readable report: all metrics at every k, latencies, index build, stages."""
    fusion = report.fusion
    return {
        "dataset": report.dataset,
        "kb": _kb_json(report),
        "queries": {"loaded": report.queries_loaded, "judged": report.queries_judged},
        "k": report.k, "ks": list(report.ks), "channel_k": report.channel_k,
        "top_k": report.depth,
        "fusion_source": None if fusion is None else fusion.source,
        "fusion": None if fusion is None else fusion.to_json(),
        "index": _index_json(report),
        "stages": report.stages,
        "configs": [_config_json(r) for r in report.results],
        "run_files": report.run_files,
    }


def render_table(console: Console, report: EvalReport) -> None:
    """One row per configuration at the report's k, with latency; index and stage notes below."""
    columns = _columns(report)
    troubled = any(r.failed_queries or r.degraded_queries for r in report.results)
    table = Table(title=f"{report.dataset}: {report.queries_judged} judged queries "
                        f"(of {report.queries_loaded}), {_size(report)}",
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
    if report.fusion is not None:  # the header: which fusion these numbers are
        console.print(report.fusion.line(), markup=False, highlight=False)
    console.print(table)
    if any(r.chunk_per_query for r in report.results):
        console.print(_chunk_table(report, columns))
    console.print(_index_line(report))
    for stage, note in report.stages.items():
        console.print(f"{stage}: {note}")
    for name, path in report.run_files.items():
        console.print(f"run {name}: {path}")


def _size(report: EvalReport) -> str:
    if report.index is not None:
        return f"{report.index.passages} passages"
    return f"{report.live.documents} documents (live)" if report.live else "-"


def _chunk_table(report: EvalReport, columns: list[tuple[str, str]]) -> Table:
    """Chunk-level scores: a hit counts for a labelled chunk it is, or is the child of."""
    judged = max(len(r.chunk_per_query) for r in report.results)
    table = Table(title=f"chunk level: {judged} queries with chunk labels",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("config", no_wrap=True)
    for _, label in columns:
        table.add_column(label, justify="right", no_wrap=True)
    for result in report.results:
        table.add_row(result.config.name,
                      *(f"{result.chunk_means.get(key, 0.0):.4f}" for key, _ in columns))
    return table


def to_markdown(report: EvalReport) -> str:
    """A GitHub markdown table of the configurations at the report's k, with latency.

    The fusion statement comes first; chunk-level scores follow when there are chunk labels.
    """
    columns = _columns(report)
    header = ["config", *(label for _, label in columns), "p50 ms", "p95 ms"]
    lines = [report.fusion.line(), ""] if report.fusion is not None else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in report.results:
        p50, p95 = result.latency_ms(50), result.latency_ms(95)
        cells = [result.config.name, *(f"{result.means.get(k, 0.0):.3f}" for k, _ in columns),
                 "-" if p50 is None else f"{p50:.1f}", "-" if p95 is None else f"{p95:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    if any(r.chunk_per_query for r in report.results):
        lines += ["", "chunk level:", "",
                  "| " + " | ".join(["config", *(label for _, label in columns)]) + " |",
                  "|" + "---|" * (len(columns) + 1)]
        lines += ["| " + " | ".join([r.config.name, *(f"{r.chunk_means.get(k, 0.0):.3f}"
                                                       for k, _ in columns)]) + " |"
                  for r in report.results]
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
