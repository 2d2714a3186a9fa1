"""`ragsift rebuild-sparse` and `ragsift reindex`: maintenance of a knowledge base's indexes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragsift.cli.common import (
    CliFailure,
    echo_json,
    err,
    kb_named,
    load_settings,
    open_container,
    out,
)
from ragsift.cli.options import DataDir, JsonFlag, KbName

if TYPE_CHECKING:
    from ragsift.bootstrap import Container
    from ragsift.domain.models import KnowledgeBase
    from ragsift.ingestion.maintenance import ReindexOutcome, SparseRebuildReport

OptionalKb = Annotated[str | None, typer.Option(
    "--kb", help="Knowledge base name or id [every knowledge base].")]
DocIds = Annotated[list[str] | None, typer.Option(
    "--doc-id", help="Only this document (repeatable) [every document of the KB].")]


@contextmanager
def _upgrading_container(data_dir: Path | None) -> Iterator[Container]:
    """The container, with an outdated BM25 layout moved aside instead of refused."""
    from ragsift.bootstrap import build

    container = build(load_settings(data_dir), upgrade_sparse_layout=True)
    try:
        yield container
    finally:
        container.close()


def _kb_named_or_id(container: Container, name_or_id: str) -> KnowledgeBase:
    """By name, else by id: the error of a damaged BM25 index names the KB by its id."""
    by_id = container.repository.get_kb(name_or_id)
    if container.repository.get_kb_by_name(name_or_id) is None and by_id is not None:
        return by_id
    return kb_named(container, name_or_id)


def _columns() -> tuple[TextColumn, BarColumn, MofNCompleteColumn, TimeElapsedColumn]:
    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn())


def rebuild_sparse(kb: OptionalKb = None, data_dir: DataDir = None,
                   as_json: JsonFlag = False) -> None:
    """Rebuild the BM25 index from the stored chunks and FAQ entries; nothing is re-embedded.

    The new index is built beside the live one and switched in atomically; a damaged one
    (files emptied, truncated or missing) is replaced without being read. Also upgrades a
    data directory with the old single-index BM25 layout (then every KB is rebuilt).
    """
    from ragsift.bootstrap import build_maintenance

    with _upgrading_container(data_dir) as container:
        maintenance = build_maintenance(container)
        with Progress(*_columns(), console=err, transient=True) as bar:
            if maintenance.sparse_upgrade_pending() or kb is None:
                if kb is not None:
                    err.print("the BM25 layout is being upgraded: rebuilding every knowledge base")
                task = bar.add_task("knowledge bases", total=len(container.repository.list_kbs()))
                reports = maintenance.rebuild_sparse_all(done=lambda _: bar.advance(task))
            else:
                reports = [maintenance.rebuild_sparse(_kb_named_or_id(container, kb))]
    if as_json:
        echo_json([_report_json(report) for report in reports])
        return
    for report in reports:
        out.print(f"{report.kb_name}: BM25 rebuilt from {report.chunks} chunks and "
                  f"{report.faq_entries} FAQ entries")
    if not reports:
        out.print("no knowledge bases")


def fill_second_dense(kb: OptionalKb = None, data_dir: DataDir = None,
                      as_json: JsonFlag = False) -> None:
    """Encode the chunks the second dense channel (USE) lacks: those indexed before it was on.

    Nothing else is re-embedded or re-parsed; searches go on meanwhile; safe to run again.
    """
    from ragsift.bootstrap import build_maintenance

    with open_container(data_dir) as container:
        maintenance = build_maintenance(container)
        kbs = (container.repository.list_kbs() if kb is None
               else [_kb_named_or_id(container, kb)])
        batch = container.settings.embedding_batch_size
        filled = {k.name: maintenance.fill_second_dense(k, batch) for k in kbs}
    if as_json:
        echo_json([{"kb": name, "filled": count} for name, count in filled.items()])
        return
    for name, count in filled.items():
        out.print(f"{name}: {count} chunks added to the second dense channel")
    if not filled:
        out.print("no knowledge bases")


def _report_json(report: SparseRebuildReport) -> dict[str, object]:
    return {"kb_id": report.kb_id, "kb": report.kb_name, "chunks": report.chunks,
            "faq_entries": report.faq_entries}


def reindex(kb: KbName, doc_id: DocIds = None, data_dir: DataDir = None,
            as_json: JsonFlag = False) -> None:
    """Re-parse documents from their stored originals (after a parser or chunking change).

    Each document is hidden from search only while it is re-parsed. Exit 2 if any document
    failed or was skipped.
    """
    from ragsift.bootstrap import build_maintenance
    from ragsift.domain.models import DocumentStatus

    with open_container(data_dir) as container:
        knowledge_base = kb_named(container, kb)
        maintenance = build_maintenance(container)
        total = len(maintenance.documents_to_reindex(knowledge_base, doc_id or None))
        with Progress(*_columns(), console=err, transient=True) as bar:
            task = bar.add_task("documents", total=total)
            chunks = bar.add_task("chunks embedded", total=None)
            outcomes = maintenance.reindex(
                knowledge_base, doc_id or None, progress=lambda n: bar.advance(chunks, n),
                done=lambda _: bar.advance(task),
            )
        if not doc_id:  # the whole KB was rebuilt with its settings
            container.kb_settings.mark_built(knowledge_base.id)
    bad = [o for o in outcomes if o.skipped or o.document.status != DocumentStatus.READY]
    if as_json:
        echo_json([_outcome_json(outcome) for outcome in outcomes])
    else:
        for outcome in outcomes:
            _print_outcome(outcome)
        out.print(f"{len(outcomes) - len(bad)} of {len(outcomes)} documents reindexed")
    if bad:
        raise CliFailure(f"{len(bad)} document(s) failed or were skipped", 2)


def _outcome_json(outcome: ReindexOutcome) -> dict[str, object]:
    document = outcome.document
    return {"id": document.id, "filename": document.filename, "status": document.status.value,
            "chunks": outcome.chunks, "error": document.error, "skipped": outcome.skipped}


def _print_outcome(outcome: ReindexOutcome) -> None:
    from ragsift.domain.models import DocumentStatus

    document = outcome.document
    if outcome.skipped:
        err.print(f"[yellow]skipped[/] {document.filename} ({document.id}): {outcome.skipped}")
    elif document.status == DocumentStatus.READY:
        out.print(f"[green]READY[/] {document.filename} -> {document.id} ({outcome.chunks} chunks)")
    else:
        err.print(f"[red]{document.status.value}[/] {document.filename} ({document.id}): "
                  f"{document.error}")
