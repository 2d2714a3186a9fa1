"""`ragsift eval`: retrieval quality and latency on a labelled corpus, or on a live KB."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragsift.cli.common import echo_json, err, open_container, out
from ragsift.cli.options import DataDir, JsonFlag, KbVersionOpt
from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from rich.progress import Progress

    from ragsift.bootstrap import Container
    from ragsift.evaluation.progress import Advance, ProgressFactory
    from ragsift.evaluation.report import EvalReport
    from ragsift.evaluation.session import EvalOptions


def _flag(name: str, text: str) -> Any:
    return typer.Option(name, help=text)


NO_REWRITE = "Never rewrite (rewrite is on when a chat server is configured)."
NO_RERANK = "Never rerank (rerank is on when a reranker is configured)."
MERGE = "Auto-merge: a parent replaces 2+ of its children among the hits."
EXPAND = ("Parent expansion (Small2Big): read each hit's context from the database, as a "
          "search does; the ranking is unchanged, the latency includes it.")
EvalDir = Annotated[Path | None, typer.Argument(
    help="Folder with corpus.jsonl, queries, qrels.tsv (built into KB eval-NAME); "
         "or give --kb instead.", show_default=False)]
EvalKb = Annotated[str | None, typer.Option(
    "--kb", help="Score this existing knowledge base as it is (never modified); "
                 "needs --queries with labels.", show_default=False)]
QueriesOpt = Annotated[Path | None, typer.Option(
    help="Queries JSONL {id,text}, or labels {query, relevant}; default queries.dev.jsonl. "
         "With --kb, labels lines {\"query\": text, \"relevant\": \\[entry, ...]}, an entry "
         "being a document id, key or filename, or a chunk id, as a string; or "
         "{\"document\": name, \"grade\": n}; or {\"chunk\": id, \"grade\": n}. An unknown or "
         "ambiguous name fails the run (exit 2).", show_default=False)]
QrelsOpt = Annotated[Path | None, typer.Option(help="Qrels TSV; default DATASET/qrels.tsv.")]
DumpRunOpt = Annotated[Path | None, typer.Option(
    help="TREC run file; with --ablation one per config, named FILE-stem.CONFIG.suffix.")]
FusionOpt = Annotated[str | None, typer.Option(
    help="zscore | weighted | rrf (hybrid only). Default: RAGSIFT_FUSION, or the KB's tuned "
         "fusion when RAGSIFT_USE_TUNED_FUSION=true (the output says which).",
    show_default=False)]


def _bar_progress(bar: Progress) -> ProgressFactory:
    def start(description: str, total: int) -> Advance:
        task = bar.add_task(description, total=total)
        return lambda done: bar.advance(task, done)
    return start


def _progress(stack: ExitStack, container: Container) -> ProgressFactory:
    """A transient bar on a terminal; in a log (stderr not a terminal), plain timed lines."""
    if err.is_terminal:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn())
        return _bar_progress(stack.enter_context(Progress(*columns, console=err,
                                                          transient=True)))
    from ragsift.evaluation.progress import LineProgress

    settings = container.settings
    return LineProgress(lambda line: err.print(line, markup=False, highlight=False),
                        settings.progress_interval_s, settings.progress_percent_step)


def _run(
    data_dir: Path | None, dataset: Path | None, kb: str | None, queries: Path | None,
    qrels: Path | None, options: EvalOptions, limit_queries: int | None,
) -> EvalReport:
    from ragsift.evaluation.datasets import load_beir_folder
    from ragsift.evaluation.live_kb import evaluate_kb
    from ragsift.evaluation.session import evaluate

    data = None
    if dataset is not None:
        data = load_beir_folder(dataset, queries, qrels)
        if limit_queries is not None:
            data = data.limited(limit_queries)
    # no query-embedding cache: every configuration pays for its own query embeddings
    with open_container(data_dir, query_cache_size=0) as container, ExitStack() as stack:
        progress = _progress(stack, container)
        if data is not None:
            return evaluate(container, data, options, progress)
        if kb is None or queries is None:
            raise InvalidInput("--kb needs --queries")  # checked by the caller already
        return evaluate_kb(container, kb, queries, options, progress, limit_queries)


def _conversations(data_dir: Path | None, kb: str, path: Path, k: int, as_json: bool) -> None:
    """Multi-turn evaluation of a live KB: every conversation's turns in order, searched as
    they stand, with their history, and (a rewriter configured) as standalone questions."""
    from ragsift.cli.common import kb_named
    from ragsift.evaluation.conversations import (
        load_conversations,
        score_all,
        summarize,
        to_markdown,
    )

    conversations = load_conversations(path)
    with open_container(data_dir, query_cache_size=0) as container:
        kb_id = kb_named(container, kb).id
        configs = ["plain", "history"]
        if container.settings.llm_base_url:
            configs.append("history-rewrite")
        runs = {config: score_all(container.retrieval.search, kb_id, conversations, config, k)
                for config in configs}
    rows = summarize(runs)
    if as_json:
        echo_json({"conversations": len(conversations), "k": k, "groups": [
            {"group": row.group, "turns": row.turns, "recall": row.recall,
             "versus_plain": {c: {"mean": i.mean, "low": i.low, "high": i.high}
                              for c, i in row.versus_plain.items()}}
            for row in rows]})
        return
    out.print(to_markdown(rows, k), markup=False, highlight=False)


def _check_usage(dataset: Path | None, kb: str | None, queries: Path | None,
                 qrels: Path | None) -> None:
    if (dataset is None) == (kb is None):
        raise InvalidInput("give exactly one of DATASET (a BEIR folder) and --kb NAME "
                           "(a live knowledge base)")
    if kb is not None and queries is None:
        raise InvalidInput("--kb needs --queries LABELS.jsonl (see `ragsift eval --help`)")
    if kb is not None and qrels is not None:
        raise InvalidInput("--qrels is for a DATASET folder; with --kb the labels file "
                           "carries the judgments")


def eval_command(
    dataset: EvalDir = None,
    kb: EvalKb = None,
    queries: QueriesOpt = None,
    qrels: QrelsOpt = None,
    mode: Annotated[str, typer.Option(help="dense | sparse | hybrid.")] = "hybrid",
    fusion: FusionOpt = None,
    k: Annotated[int | None, typer.Option(
        "--k", help="k of the table [10; 3 with --conversations]; JSON has 1,3,5,10,100 too.",
        show_default=False)] = None,
    ablation: Annotated[bool, _flag("--ablation", "dense, sparse, hybrid rrf, weighted, zscore "
                                    "(and the KB's tuned fusion when in use).")] = False,
    chunk: Annotated[bool, _flag("--chunk", "Chunk passages (default: one chunk each).")
                     ] = False,
    channel_k: Annotated[int | None, typer.Option(
        help="Hits per channel before fusion (default: RAGSIFT_CHANNEL_K).",
        show_default=False)] = None,
    limit_queries: Annotated[int | None, typer.Option(help="Only the first N queries.")] = None,
    dump_run: DumpRunOpt = None,
    markdown: Annotated[bool, _flag("--markdown", "Also print a markdown table.")] = False,
    disable_rewrite: Annotated[bool, _flag("--disable-rewrite", NO_REWRITE)] = False,
    disable_rerank: Annotated[bool, _flag("--disable-rerank", NO_RERANK)] = False,
    enable_auto_merge: Annotated[bool, _flag("--enable-auto-merge", MERGE)] = False,
    enable_parent_expansion: Annotated[bool, _flag("--enable-parent-expansion", EXPAND)
                                       ] = False,
    kb_version: KbVersionOpt = None,
    conversations: Annotated[Path | None, typer.Option(
        "--conversations", help="Multi-turn: a JSONL of conversations ({id, turns: [{query, "
        "relevant: [file names]}]}) scored on --kb per turn position and for follow-ups, "
        "searched alone and with their history (recall@k per document).",
        show_default=False)] = None,
    as_json: JsonFlag = False,
    data_dir: DataDir = None,
) -> None:
    """Measure retrieval quality and latency: a labelled corpus folder, or a live KB (--kb).

    A DATASET folder is built into KB eval-NAME (resumed or reused); --kb scores an existing
    knowledge base read-only, through the same search path as `ragsift search`. In a log
    (stderr not a terminal) progress comes as a line every RAGSIFT_PROGRESS_INTERVAL_S.
    """
    from typing import get_args

    from ragsift.domain.requests import Fusion, Mode
    from ragsift.evaluation.report import render_table, to_json, to_markdown
    from ragsift.evaluation.session import EvalOptions

    if conversations is not None:
        if kb is None or dataset is not None:
            raise InvalidInput("--conversations scores a live knowledge base: give --kb NAME")
        _conversations(data_dir, kb, conversations, k or 3, as_json)
        return
    k = k or 10
    _check_usage(dataset, kb, queries, qrels)
    if mode not in get_args(Mode) or (fusion is not None and fusion not in get_args(Fusion)):
        raise InvalidInput(f"--mode must be one of {get_args(Mode)} and --fusion one of "
                           f"{get_args(Fusion)}")
    options = EvalOptions(
        mode=mode, fusion=fusion, ablation=ablation, k=k,  # type: ignore[arg-type]
        chunk=chunk, channel_k=channel_k, dump_run=dump_run, disable_rewrite=disable_rewrite,
        disable_rerank=disable_rerank, enable_auto_merge=enable_auto_merge,
        enable_parent_expansion=enable_parent_expansion,
        kb_version=kb_version,
    )
    report = _run(data_dir, dataset, kb, queries, qrels, options, limit_queries)
    if as_json:
        echo_json(to_json(report))
        return
    render_table(out, report)
    if markdown:
        out.print(to_markdown(report), markup=False, highlight=False)
