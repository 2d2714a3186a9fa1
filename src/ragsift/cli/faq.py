"""`ragsift faq`: import, list, get, update, delete and clear the FAQ entries of a KB."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragsift.cli.common import echo_json, err, kb_named, open_container, out
from ragsift.cli.options import DataDir, JsonFlag, KbName
from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from ragsift.domain.faq import FaqEntry

faq_app = typer.Typer(help="FAQ entries (question, answer, source, scope) of a knowledge base.",
                      no_args_is_help=True)

FaqId = Annotated[str, typer.Argument(help="The entry's id (see `ragsift faq list`).")]
Source = Annotated[str | None, typer.Option(help="Source of the answers.")]
Tenant = Annotated[str | None, typer.Option("--tenant-id", help="Tenant of the entries.")]
Dataset = Annotated[str | None, typer.Option("--dataset-id", help="Dataset of the entries.")]
Visibility = Annotated[str | None, typer.Option(help="Visibility level of the entries.")]
Roles = Annotated[list[str] | None, typer.Option(
    "--role", help="A role allowed to see the entries (repeatable; default: everyone).")]


def _scope_text(entry: FaqEntry) -> str:
    parts = [f"{name}={value}" for name, value in (
        ("tenant", entry.tenant_id), ("dataset", entry.dataset_id),
        ("visibility", entry.visibility), ("roles", ",".join(entry.allowed_roles) or None),
    ) if value]
    return " ".join(parts) or "-"


@faq_app.command("import")
def faq_import(
    file: Annotated[Path, typer.Argument(help="JSONL {question,answer,source?} or CSV file.")],
    kb: KbName,
    source: Source = None,
    tenant_id: Tenant = None,
    dataset_id: Dataset = None,
    visibility: Visibility = None,
    role: Roles = None,
    data_dir: DataDir = None,
) -> None:
    """Import FAQ entries (the KB is created if needed); entries already held are skipped.

    --source/--tenant-id/--dataset-id/--visibility/--role are the scope of rows that give
    none; a row's own source, tenant_id, dataset_id, visibility or allowed_roles override them.
    """
    from ragsift.domain.faq import clean_roles
    from ragsift.domain.models import DocumentScope

    defaults = DocumentScope(source=source, tenant_id=tenant_id, dataset_id=dataset_id,
                             visibility=visibility, allowed_roles=clean_roles(role))
    with open_container(data_dir) as container:
        rows = container.faq.read(file)  # a malformed file stops here, before the KB exists
        knowledge_base = container.ingestion.ensure_kb(kb)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("questions embedded", total=None)
            outcome = container.faq.import_rows(
                knowledge_base, rows, progress=lambda n: bar.advance(task, n), defaults=defaults,
            )
        total = container.repository.count_faq_entries(knowledge_base.id)
    out.print(f"{outcome.added} added, {outcome.duplicates} duplicate(s) skipped, "
              f"{outcome.rows} rows read; {kb!r} now holds {total} FAQ entries")


@faq_app.command("list")
def faq_list(
    kb: KbName,
    offset: Annotated[int, typer.Option(min=0, help="Entries to skip.")] = 0,
    limit: Annotated[int | None, typer.Option(min=1, max=500, help="Entries to show [all].")
                     ] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List the live FAQ entries of a knowledge base in the order they were added."""
    with open_container(data_dir, follow=True) as container:
        entries = container.faq.page(kb_named(container, kb), offset, limit).entries
    if as_json:
        echo_json([e.model_dump(mode="json") for e in entries])
        return
    for entry in entries:
        answer = " ".join(entry.answer.split())
        answer = answer[:80] + "…" if len(answer) > 80 else answer
        out.print(f"{entry.id}\t{escape(entry.question)}\t{escape(answer)}"
                  f"\t{escape(entry.source or '-')}\t{escape(_scope_text(entry))}")


@faq_app.command("get")
def faq_get(faq_id: FaqId, kb: KbName, data_dir: DataDir = None,
            as_json: JsonFlag = False) -> None:
    """Show one FAQ entry (a retired one too: its valid_to_seq says since which version)."""
    with open_container(data_dir, follow=True) as container:
        entry = container.faq.get(kb_named(container, kb), faq_id)
    if as_json:
        echo_json(entry.model_dump(mode="json"))
        return
    window = f"{entry.valid_from_seq}-{entry.valid_to_seq or 'now'}"
    for label, value in (("id", entry.id), ("question", entry.question),
                         ("answer", entry.answer), ("source", entry.source or "-"),
                         ("scope", _scope_text(entry)), ("versions", window)):
        out.print(f"{label}\t{escape(value)}")


@faq_app.command("update")
def faq_update(
    faq_id: FaqId,
    kb: KbName,
    question: Annotated[str | None, typer.Option(help="The new question.")] = None,
    answer: Annotated[str | None, typer.Option(help="The new answer.")] = None,
    source: Annotated[str | None, typer.Option(help="The new source ('' clears it).")] = None,
    tenant_id: Annotated[str | None, typer.Option(
        "--tenant-id", help="The new tenant ('' clears it).")] = None,
    dataset_id: Annotated[str | None, typer.Option(
        "--dataset-id", help="The new dataset ('' clears it).")] = None,
    visibility: Annotated[str | None, typer.Option(
        help="The new visibility ('' clears it).")] = None,
    role: Annotated[list[str] | None, typer.Option(
        "--role", help="The allowed roles, replacing the old ones (repeatable; --role '' "
                       "lets every role see it).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Change an entry: it is re-embedded and re-indexed under a new id (printed); options
    left out keep their values."""
    from pydantic import ValidationError

    from ragsift.domain.faq import FaqChanges, clean_roles

    given: dict[str, Any] = {name: value for name, value in (
        ("question", question), ("answer", answer), ("source", source),
        ("tenant_id", tenant_id), ("dataset_id", dataset_id), ("visibility", visibility),
    ) if value is not None}
    if role is not None:
        given["allowed_roles"] = clean_roles(role)
    if not given:
        raise InvalidInput("nothing to change: give --question, --answer, --source, "
                           "--tenant-id, --dataset-id, --visibility or --role")
    for name in ("question", "answer"):
        if name in given and not given[name].strip():
            raise InvalidInput(f"--{name} cannot be empty")
    try:
        changes = FaqChanges.model_validate(given)
    except ValidationError as exc:
        raise InvalidInput(str(exc)) from exc
    with open_container(data_dir) as container:
        updated = container.faq.update(kb_named(container, kb), faq_id, changes)
    if as_json:
        echo_json(updated.model_dump(mode="json"))
    elif updated.id == faq_id:
        out.print(f"FAQ entry {faq_id} unchanged")
    else:
        out.print(f"updated FAQ entry {faq_id}: now {updated.id}")


@faq_app.command("delete")
def faq_delete(faq_id: FaqId, kb: KbName, data_dir: DataDir = None) -> None:
    """Delete one FAQ entry from the knowledge base (retained older versions keep it)."""
    with open_container(data_dir) as container:
        container.faq.delete(kb_named(container, kb), faq_id)
    out.print(f"deleted FAQ entry {faq_id} from {kb!r}")


@faq_app.command("clear")
def faq_clear(kb: KbName, data_dir: DataDir = None) -> None:
    """Delete every FAQ entry of a knowledge base (retained older versions keep them)."""
    with open_container(data_dir) as container:
        removed = container.faq.clear(kb_named(container, kb))
    out.print(f"deleted {removed} FAQ entries from {kb!r}")
