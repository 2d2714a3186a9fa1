"""`ragsift ingest` (files and folders under their keys) and `ragsift sync` (a folder kept
in step with a knowledge base: add, replace, and with --prune delete)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragsift.cli.common import CliFailure, err, open_container, out
from ragsift.cli.metadata import checked_metadata, given_metadata
from ragsift.cli.options import DataDir, KbName, MetaFileOpt, MetaOpt
from ragsift.cli.prepare import prepare_embedder

if TYPE_CHECKING:
    from ragsift.bootstrap import Container
    from ragsift.cli.ingest_report import Tally
    from ragsift.domain.models import Document, DocumentScope, KnowledgeBase
    from ragsift.ingestion.files import SourceFile, SyncPlan

Globs = Annotated[list[str] | None, typer.Option(help="Glob on the path inside the folder.")]


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (folders recurse).")],
    kb: KbName,
    data_dir: DataDir = None,
    key: Annotated[str | None, typer.Option(
        help="The document's key, for one file [its path in the folder, or its name].")] = None,
    source: Annotated[str | None, typer.Option(help="Source label for filters.")] = None,
    tenant_id: Annotated[str | None, typer.Option(help="Tenant of the documents.")] = None,
    dataset_id: Annotated[str | None, typer.Option(help="Dataset of the documents.")] = None,
    visibility: Annotated[str | None, typer.Option(help="Visibility level.")] = None,
    role: Annotated[list[str] | None, typer.Option(
        "--role", help="A role allowed to see the documents (repeatable; default: everyone).")
    ] = None,
    meta: MetaOpt = None,
    meta_file: MetaFileOpt = None,
    replace_meta: Annotated[bool, typer.Option(
        "--replace-meta", help="Set the metadata of a file whose bytes are already a document "
        "of the KB too (by default that document keeps its own).")] = False,
) -> None:
    """Ingest files into a knowledge base (created if needed); a file whose key exists with
    other bytes replaces that document. Exit 2 if any document failed."""
    # imported here: the parsers and the container are not needed for --help
    from ragsift.bootstrap import tokenize_small_ingest
    from ragsift.domain.models import DocumentScope
    from ragsift.ingestion.files import find_files

    found = find_files(paths, key=key)
    for path, why in found.skipped:
        err.print(f"[yellow]skipped[/] {escape(str(path))}: {why}")
    given = (source, tenant_id, dataset_id, visibility, role)
    # none given: a key's document keeps its scope (as in `sync`), a new one gets none
    scope = DocumentScope(source=source, tenant_id=tenant_id, dataset_id=dataset_id,
                          visibility=visibility, allowed_roles=tuple(role or ())
                          ) if any(given) else None
    meta_given = given_metadata(meta, meta_file)
    with open_container(data_dir) as container:
        # checked before any file is ingested: bad metadata (or a bad sidecar) ingests nothing
        if meta_given is not None:
            checked_metadata(meta_given, container.settings)
        tokenize_small_ingest(container.settings, _total_bytes(found.files))
        metadata = _file_metadata(container, found.files, meta_given)
        knowledge_base = container.ingestion.ensure_kb(kb)
        if found.files:
            prepare_embedder(container.embedder)
        tally = _run(container, knowledge_base, found.files, scope, metadata,
                     replace_meta=replace_meta)
    out.print(f"{tally.ingested} of {len(found.files)} documents ingested into {kb!r}"
              + tally.duplicates_note())
    _finish(container, knowledge_base, tally)


def _total_bytes(files: list[SourceFile]) -> int:
    total = 0
    for source in files:
        try:
            total += source.path.stat().st_size
        except OSError:
            continue  # its ingest says why
    return total


def sync(
    folder: Annotated[Path, typer.Argument(help="The folder the KB mirrors.")],
    kb: KbName,
    data_dir: DataDir = None,
    prune: Annotated[bool, typer.Option(
        "--prune", help="Delete documents whose files are gone from the folder.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan only.")] = False,
    include: Globs = None,
    exclude: Globs = None,
) -> None:
    """Make a KB match a folder: new files added, changed ones replaced (size + mtime, then
    sha256), with --prune deleted ones removed. Idempotent; a re-run resumes a killed one."""
    from ragsift.bootstrap import tokenize_small_ingest
    from ragsift.cli.ingest_report import Tally
    from ragsift.ingestion.files import find_files, plan_sync

    if not folder.is_dir():
        raise CliFailure(f"not a folder: {folder}", 2)
    found = find_files([folder], include or (), exclude or ())
    with open_container(data_dir) as container:
        prepare_embedder(container.embedder)
        knowledge_base = container.ingestion.ensure_kb(kb)
        documents = container.repository.documents_by_key(knowledge_base.id)
        plan = plan_sync(found, documents, prune, include or (), exclude or ())
        _print_plan(plan)
        metadata = _file_metadata(container, found.files, None)
        if dry_run:
            out.print("dry run: nothing changed")
            return
        for source, document in plan.touched:
            container.repository.set_source_mtime(document.id, source.path.stat().st_mtime)
        for document in plan.delete_first:  # an added file holds its bytes
            _delete(container, document)
        todo = plan.todo()
        tokenize_small_ingest(container.settings, _total_bytes(todo))
        # sidecars are the folder's own statement of its metadata: a file's applies to its
        # own document, even unchanged, but never to another key's holding the same bytes
        tally = (_run(container, knowledge_base, todo, None, metadata, replace_meta=True,
                      own_key_only=True) if todo else Tally())
        # a changed sidecar beside an unchanged file changes only the metadata
        changed = {document.id: wanted for source, document in plan.unchanged + plan.touched
                   if (wanted := metadata.get(source.key)) is not None
                   and wanted != document.metadata}
        # the index first, in one write (metadata_refresh.py), then the facts
        container.ingestion.refresh_metadata(changed)
        for document_id, wanted in changed.items():
            container.repository.set_metadata(document_id, wanted)
        if changed:  # a change of the draft like any other: auto mode publishes it
            container.versions.metadata_changed(knowledge_base)
        first = {document.id for document in plan.delete_first}
        for document in plan.delete:
            if document.id not in first:
                _delete(container, document)
        tally.duplicate += _report_duplicates(plan, metadata).duplicate
        tally.failed += sum(len(group) for group in plan.conflicts.values())
    # counted from what each file's line says, not from the plan: a resumed run finishes
    # (adds) documents a killed one registered under their keys
    unchanged = len(plan.unchanged) + len(plan.touched) + tally.unchanged
    out.print(f"synced {folder} into {kb!r}: {tally.added} added, {tally.replaced} "
              f"replaced, {len(plan.delete)} deleted, {unchanged} unchanged"
              + tally.duplicates_note())
    _finish(container, knowledge_base, tally)


def _print_plan(plan: SyncPlan) -> None:
    for path, why in plan.skipped:
        err.print(f"[yellow]skipped[/] {escape(str(path))}: {why}")
    for key, sources in plan.conflicts.items():
        for source in sources:
            err.print(f"[red]FAILED[/] {escape(str(source.path))}: key {key!r} is given by "
                      f"{len(sources)} files; nothing is synced for it")
    duplicates = (f", {len(plan.duplicates)} duplicate(s) of documents already in it"
                  if plan.duplicates else "")
    out.print(f"plan: {len(plan.add)} to add, {len(plan.replace)} to replace, "
              f"{len(plan.delete)} to delete, {len(plan.unchanged) + len(plan.touched)} "
              f"unchanged, {len(plan.skipped)} skipped{duplicates}")
    for label, keys in (("add", [s.key for s in plan.add]),
                        ("replace", [s.key for s, _ in plan.replace]),
                        ("delete", [d.key or d.filename for d in plan.delete])):
        for key in keys:
            out.print(f"  {label} {escape(key)}")


def _delete(container: Container, document: Document) -> None:
    container.ingestion.delete_document(document.id)
    out.print(f"[red]deleted[/] {escape(document.key or document.filename)}")


def _report_duplicates(plan: SyncPlan, metadata: dict[str, dict[str, Any]]) -> Tally:
    """The lines an ingest prints for the plan's duplicates, their own metadata included
    (never applied to another key's document)."""
    from ragsift.cli.ingest_report import report
    from ragsift.ingestion.files import FileResult
    from ragsift.ingestion.outcomes import IngestOutcome

    return report([FileResult(source, IngestOutcome(document, duplicate=True))
                   for source, document in plan.duplicates],
                  metadata_not_theirs={s.key for s, _ in plan.duplicates if s.key in metadata})


def _file_metadata(
    container: Container, files: list[SourceFile], given: dict[str, Any] | None,
) -> dict[str, dict[str, Any]]:
    """Metadata by file key: a Markdown file's front matter, its sidecar (NAME.meta.json)
    over it, the command's --meta / --meta-file over both, validated; files with none are
    left out."""
    from ragsift.config import metadata_limits
    from ragsift.ingestion.front_matter import front_matter, is_markdown
    from ragsift.ingestion.sidecars import read_sidecars

    sidecars = read_sidecars([source.path for source in files],
                             metadata_limits(container.settings))
    result: dict[str, dict[str, Any]] = {}
    for source in files:
        own = sidecars.get(source.path)
        front = front_matter(source.path.read_bytes()) if is_markdown(source.path.name) else {}
        if own is not None or given is not None or front:
            result[source.key] = checked_metadata({**front, **(own or {}), **(given or {})},
                                                  container.settings)
    return result


def _run(
    container: Container, kb: KnowledgeBase, files: list[SourceFile],
    scope: DocumentScope | None, metadata: dict[str, dict[str, Any]] | None = None,
    *, replace_meta: bool, own_key_only: bool = False,
) -> Tally:
    from ragsift.cli.ingest_report import report
    from ragsift.ingestion.files import ingest_files
    from ragsift.ingestion.given_metadata import apply_given_metadata

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        embedding = bar.add_task("chunks embedded", total=None)
        results, resumed = ingest_files(
            container.ingestion, kb, files, scope, lambda n: bar.advance(embedding, n),
            lambda registered: _metadata_first(container, registered, metadata or {}))
    listed = {r.outcome.document.id for r in results if r.outcome is not None}
    # the documents' own, not the index's: set after ingesting, nothing is re-embedded; a
    # duplicate keeps its own unless asked (as an upload does without replace=true)
    kept: set[str] = set()
    not_theirs: set[str] = set()  # own_key_only: duplicates of another key's document
    for result in results:
        wanted = (metadata or {}).get(result.source.key)
        outcome = result.outcome
        if outcome is None or wanted is None:
            continue
        # the key, not the duplicate flag: a file joining a document of the same run (not yet
        # READY, so no "duplicate") ends in another key's document too
        if own_key_only and outcome.document.key != result.source.key:
            not_theirs.add(result.source.key)
        elif apply_given_metadata(container.repository, container.versions, kb, outcome,
                                  wanted, replace_meta, container.ingestion.refresh_metadata):
            kept.add(result.source.key)
    tally = report(results, kept, not_theirs)
    if resumed:
        others = len([i for i in resumed if i not in listed])
        out.print(f"resumed {len(resumed)} document(s) an interrupted run left unfinished"
                  + (f" ({others} not among these files)" if others else ""))
    return tally


def _metadata_first(container: Container, registered: list[tuple[SourceFile, Document]],
                    metadata: dict[str, dict[str, Any]]) -> None:
    """Each new document's own metadata set before it is processed, so its chunks are
    indexed with it (the rule below then finds it set); a document a file joined under
    another key is left to that rule."""
    for source, document in registered:
        wanted = metadata.get(source.key)
        if wanted is not None and document.key == source.key:
            container.repository.set_metadata(document.id, wanted)


def _finish(container: Container, kb: KnowledgeBase, tally: Tally) -> None:
    versions = container.versions.state(kb)
    if versions.mode == "staged":
        out.print(f"{kb.name!r} is staged: the changes wait in draft version "
                  f"{versions.draft_seq} (active: {versions.active_seq}) until `ragsift kb "
                  f"version new --kb {kb.name}` and `ragsift kb version activate`")
    if tally.failed:
        # each failure's line says why; only an unsupported type's lists the supported ones
        raise CliFailure(f"{tally.failed} document(s) failed", 2)
    if tally.busy:
        raise CliFailure(f"{tally.busy} document(s) are being ingested by another process", 2)
