"""`ragsift tune`: fit a knowledge base's fusion to its own labelled queries and store it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ragsift.cli.common import echo_json, err, kb_named, open_container, out
from ragsift.cli.options import DataDir, JsonFlag, KbName

if TYPE_CHECKING:
    from ragsift.evaluation.datasets import EvalQuery, Qrels
    from ragsift.evaluation.kb_tuning import TuningResult

# ragsift.evaluation.kb_tuning.TUNING_METRICS, written out so that --help need not import the
# evaluation (a test keeps the two equal)
METRICS = tuple(f"{name}@{k}" for name in ("ndcg", "recall", "mrr", "precision")
                for k in (10, 100))

QueriesFile = Annotated[Path, typer.Option(
    "--queries", help="Labels JSONL {query, relevant: {doc id | filename | chunk id: grade}}, "
                      "or queries JSONL {id, text} with --qrels.")]


def _labels(queries: Path, qrels: Path | None) -> tuple[tuple[EvalQuery, ...], Qrels]:
    from ragsift.evaluation.datasets import load_jsonl_labels, load_queries, read_qrels

    if qrels is None:
        return load_jsonl_labels(queries)
    return load_queries(queries), read_qrels(qrels)


def _render(result: TuningResult, stored: bool) -> None:
    tuned = result.tuned
    cv = result.cross_validation
    table = Table(title=f"best configurations on all {tuned.queries} queries ({tuned.metric})")
    table.add_column("configuration")
    table.add_column(tuned.metric, justify="right")
    for label, value in result.best:
        table.add_row(label, f"{value:.4f}")
    table.add_row(f"baseline: {tuned.baseline}", f"{tuned.baseline_score:.4f}")
    out.print(table)
    out.print(f"chosen: {tuned.label}")
    out.print(f"{cv.folds}-fold held-out gain over the baseline: {cv.gain:+.4f} "
              f"± {cv.gain_spread:.4f} (per-fold choices: {', '.join(cv.chosen)})")
    if stored:
        out.print("stored with the knowledge base; used by requests that opt in "
                  "(--tuned, \"tuned_fusion\": true, or RAGSIFT_USE_TUNED_FUSION=true)")
    if cv.gain <= cv.gain_spread:
        err.print("[yellow]note:[/] the held-out gain is within its spread: the tuned fusion "
                  "may not help on new queries")


def tune_command(
    kb: KbName,
    queries: QueriesFile,
    qrels: Annotated[Path | None, typer.Option(help="Qrels TSV for a {id, text} file.")] = None,
    folds: Annotated[int, typer.Option(help="Cross-validation folds.")] = 5,
    metric: Annotated[str, typer.Option(help=f"One of {', '.join(METRICS)}.")
                      ] = "ndcg@10",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only; store nothing.")
                       ] = False,
    as_json: JsonFlag = False,
    data_dir: DataDir = None,
) -> None:
    """Fit this KB's fusion (method, weights, channel width, RRF k) to its labels.

    Each labelled query is searched once; a grid of configurations is fused offline and
    the choice is cross-validated, so the gain reported is held-out. Searches use the result
    only when they opt in.
    """
    from ragsift.domain.models import DocumentStatus
    from ragsift.evaluation.kb_tuning import FusionTuner, resolve_labels

    eval_queries, labels = _labels(queries, qrels)
    with open_container(data_dir) as container:
        knowledge_base = kb_named(container, kb)
        documents = container.repository.list_documents(knowledge_base.id, DocumentStatus.READY)
        keys = [key for relevant in labels.values() for key in relevant]
        chunk_documents = {c.id: c.document_id for c in container.repository.get_chunks(keys)}
        resolved, unknown = resolve_labels(labels, documents, chunk_documents)
        if unknown:
            err.print(f"[yellow]note:[/] {len(unknown)} judgments name no READY document, "
                      f"filename or chunk of {kb!r} (e.g. {unknown[0]!r}); they count as missed")
        tuner = FusionTuner(container.index, container.embedder, container.settings,
                            folds=folds, metric=metric)
        result = tuner.tune(knowledge_base, eval_queries, resolved)
        if not dry_run:
            container.repository.save_tuned_fusion(result.tuned)
    if as_json:
        echo_json({"tuned": result.tuned.model_dump(mode="json"), "stored": not dry_run,
                   "folds": list(result.cross_validation.held_out),
                   "baseline_folds": list(result.cross_validation.baseline),
                   "chosen_per_fold": list(result.cross_validation.chosen),
                   "best": [{"config": c, metric: v} for c, v in result.best]})
        return
    _render(result, stored=not dry_run)

