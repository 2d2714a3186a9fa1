"""`ragsift faq`: import, list and clear the FAQ entries of a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragsift.cli_common import (
    DataDir,
    JsonFlag,
    KbName,
    echo_json,
    err,
    kb_named,
    open_container,
    out,
)

faq_app = typer.Typer(help="FAQ entries (question, answer, source) of a knowledge base.",
                      no_args_is_help=True)


@faq_app.command("import")
def faq_import(
    file: Annotated[Path, typer.Argument(help="JSONL {question,answer,source?} or CSV file.")],
    kb: KbName,
    data_dir: DataDir = None,
) -> None:
    """Import FAQ entries (the KB is created if needed); pairs already held are skipped."""
    with open_container(data_dir) as container:
        rows = container.faq.read(file)  # a malformed file stops here, before the KB exists
        knowledge_base = container.ingestion.ensure_kb(kb)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("questions embedded", total=None)
            outcome = container.faq.import_rows(
                knowledge_base, rows, progress=lambda n: bar.advance(task, n)
            )
        total = container.repository.count_faq_entries(knowledge_base.id)
    out.print(f"{outcome.added} added, {outcome.duplicates} duplicate(s) skipped, "
              f"{outcome.rows} rows read; {kb!r} now holds {total} FAQ entries")


@faq_app.command("list")
def faq_list(kb: KbName, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List the FAQ entries of a knowledge base in the order they were added."""
    with open_container(data_dir) as container:
        entries = container.repository.list_faq_entries(kb_named(container, kb).id)
    if as_json:
        echo_json([e.model_dump(mode="json") for e in entries])
        return
    for entry in entries:
        answer = " ".join(entry.answer.split())
        answer = answer[:80] + "…" if len(answer) > 80 else answer
        out.print(f"{entry.id}\t{escape(entry.question)}\t{escape(answer)}"
                  f"\t{escape(entry.source or '-')}")


@faq_app.command("clear")
def faq_clear(kb: KbName, data_dir: DataDir = None) -> None:
    """Delete every FAQ entry of a knowledge base from the facts and the FAQ index."""
    with open_container(data_dir) as container:
        removed = container.faq.delete_all(kb_named(container, kb))
    out.print(f"deleted {removed} FAQ entries from {kb!r}")
