"""Rich rendering of results and traces for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ragsift.domain.models import Locator
    from ragsift.domain.results import RetrievalResult
    from ragsift.domain.trace import RetrievalTrace, StageTrace, Switches


def _fmt(value: float | int | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def _where(heading_path: tuple[str, ...], locator: Locator) -> str:
    parts = [" > ".join(heading_path)] if heading_path else []
    if locator.page is not None:
        parts.append(f"p.{locator.page}")
    if locator.sheet is not None:
        parts.append(f"{locator.sheet}!{locator.cell_range or ''}")
    elif locator.cell_range is not None:  # a CSV file: one sheet without a name
        parts.append(locator.cell_range)
    if locator.slide is not None:
        parts.append(f"slide {locator.slide}")
    if locator.record is not None:
        parts.append(f"record {locator.record}")
    return " · ".join(parts)


def render_hits(console: Console, result: RetrievalResult, snippet: int = 160) -> None:
    """One block per hit: rank, scores, file, location and the start of the text."""
    if not result.hits:
        route = result.trace.route
        reason = result.trace.scope.empty_reason or "no matching evidence"
        if route.route in ("chitchat", "handoff", "out_of_scope"):
            reason = (f"not searched: the route is {route.route} ({route.reason}); "
                      "--route search searches anyway")
        console.print(f"[yellow]no results[/]: {reason}")
        return
    # several KBs searched: each hit names its KB
    names = {part.kb_id: part.kb_name or part.kb_id for part in result.trace.kbs}
    for hit in result.hits:
        text = " ".join(hit.text.split())
        if len(text) > snippet:
            text = text[:snippet] + "…"
        kb = f"[magenta]{escape(names[hit.kb_id])}[/] " if hit.kb_id in names else ""
        console.print(
            f"[bold]{hit.rank}.[/] {kb}[cyan]{hit.filename}[/] "
            f"{_where(hit.heading_path, hit.locator)}"
            f"  [dim]fusion={_fmt(hit.fusion_score)} dense#{_fmt(hit.dense_rank)}"
            f" sparse#{_fmt(hit.sparse_rank)}[/]"
        )
        console.print(f"   {text}")


def _snippet(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat[:limit] + "…" if len(flat) > limit else flat


def render_faq(console: Console, result: RetrievalResult, snippet: int = 240) -> None:
    """FAQ entries in their own block before the documents; a direct answer stands out."""
    if not result.faq_hits:
        return
    console.rule("FAQ")
    for hit in result.faq_hits:
        mark = "[bold green]DIRECT ANSWER[/] " if hit.direct_answer else ""
        source = f" source={escape(hit.source)}" if hit.source else ""
        console.print(
            f"[bold]Q{hit.rank}.[/] {mark}{escape(_snippet(hit.question, snippet))}"
            f"  [dim]dense={_fmt(hit.dense_score)} fusion={_fmt(hit.fusion_score)}"
            f" dense#{_fmt(hit.dense_rank)} sparse#{_fmt(hit.sparse_rank)}{source}[/]"
        )
        style = "green" if hit.direct_answer else ""
        answer = escape(_snippet(hit.answer, snippet))
        console.print(f"   [{style}]{answer}[/]" if style else f"   {answer}")
    console.rule("documents")


_SCORE_COLUMNS = ("dense", "sparse", "2nd dense", "fusion")


def render_scores(console: Console, result: RetrievalResult) -> None:
    """Per-hit scores of every stage: each channel's raw score and rank in its list ("-": not
    found; the second dense channel's column only when it was searched), fusion, sources."""
    second = any(run.channel == "second_dense" for run in result.trace.channels)
    table = Table(title="per-hit scores", collapse_padding=True, pad_edge=False)
    columns = ["#", "chunk", "dense", "sparse", *(["2nd dense"] if second else []),
               "fusion", "rerank", "context", "sources"]
    for column in columns:
        # numbers keep their digits at 80 columns; the sources wrap instead
        table.add_column(column, min_width=7 if column in _SCORE_COLUMNS else None,
                         max_width=8 if column == "chunk" else None)
    for hit in result.hits:
        channels = [_channel(hit.dense_score, hit.dense_rank),
                    _channel(hit.sparse_score, hit.sparse_rank)]
        if second:
            channels.append(_channel(hit.second_dense_score, hit.second_dense_rank))
        table.add_row(
            str(hit.rank), hit.chunk_id[:12], *channels, _fmt(hit.fusion_score),
            _fmt(hit.rerank_score), str(len(hit.context_chunk_ids) or "-"),
            ", ".join(hit.retrieval_sources),
        )
    console.print(table)


def _channel(score: float | None, rank: int | None) -> str:
    """A channel's raw score and the hit's rank in its list, as the debug page shows them."""
    return "-" if score is None else f"{_fmt(score)} #{_fmt(rank)}"


def _switches(switches: Switches) -> str:
    on = [name for name, value in switches.model_dump().items() if value]
    return ", ".join(on) or "none"


def _asked(asked: Mapping[str, bool | None]) -> str:
    """The switches the command line set, on or off; "none" when it left all to settings."""
    named = [name if value else f"no {name}" for name, value in asked.items()
             if value is not None]
    return ", ".join(named) or "none"


def render_trace(console: Console, trace: RetrievalTrace,
                 asked: Mapping[str, bool | None] | None = None) -> None:
    """The trace as tables: request, channels, per-hit scores are in render_hits.

    `asked`: the switch flags given (None: not given). The trace's requested switches are
    the request's values over the settings' defaults, so they alone cannot say what was asked.
    """
    summary = Table(title="retrieval trace", show_header=False)
    summary.add_row("request", trace.request_id)
    summary.add_row("mode / fusion", f"{trace.mode} / {trace.fusion}")
    summary.add_row("route", f"{trace.route.route} by {trace.route.decided_by}"
                    + (f": {trace.route.reason}" if trace.route.reason else ""))
    if trace.kb_version is not None:
        summary.add_row("knowledge-base version", str(trace.kb_version))
    summary.add_row("variants", "; ".join(f"{v.method}: {v.text}" for v in trace.variants))
    scope = trace.scope
    if scope.document_ids_requested:
        summary.add_row(
            "document whitelist",
            f"{scope.document_ids_allowed}/{scope.document_ids_requested} READY"
            + (f" ({scope.empty_reason})" if scope.empty_reason else ""),
        )
    summary.add_row("switches asked", _asked(asked or {}))
    summary.add_row("switches on / ran", f"{_switches(trace.switches_requested)} / "
                    f"{_switches(trace.switches_applied)}")
    summary.add_row("fused candidates", str(trace.fused_count))
    summary.add_row("dropped by READY check", str(trace.ready_filtered_count))
    for name in ("rewrite", "feedback", "fusion_padding", "exact_match", "auto_merge",
                 "consistency", "rerank", "threshold", "small2big", "faq"):
        stage: StageTrace = getattr(trace, name)
        text = stage.status + (f": {stage.reason}" if stage.reason else "")
        if stage.detail:
            text += " (" + ", ".join(f"{k}={v}" for k, v in stage.detail.items()) + ")"
        summary.add_row(name.replace("_", "-"), text)
    summary.add_row("returned", str(trace.returned_count))
    summary.add_row(
        "degradations",
        "; ".join(f"{d.code}: {d.reason}" for d in trace.degradations) or "none",
    )
    summary.add_row(
        "timings (ms)", ", ".join(f"{k}={v:.1f}" for k, v in trace.timings_ms.items())
    )
    console.print(summary)
    channels = Table(title="channels")
    for column in ("list", "candidates", "latency ms", "error"):
        channels.add_column(column)
    for run in trace.channels:
        channels.add_row(run.list_name, str(run.candidates), f"{run.latency_ms:.1f}",
                         run.error or "")
    console.print(channels)
