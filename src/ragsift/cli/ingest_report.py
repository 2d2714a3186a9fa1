"""The lines `ragsift ingest` and `ragsift sync` print per file, and the counts they sum to.

Each line says what the caller can now find: a file is counted ingested only when a
document of its key is READY with its bytes; a duplicate (its bytes already a document of
the same scope under another key) and a key held by another scope's document are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.markup import escape

from ragsift.cli.common import err, out
from ragsift.domain.models import DocumentScope, DocumentStatus

if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

    from ragsift.ingestion.files import FileResult
    from ragsift.ingestion.outcomes import IngestOutcome


@dataclass
class Tally:
    """What became of the files, counted the way their lines say."""

    added: int = 0  # a new document, READY now
    replaced: int = 0  # the key's document, READY with the new bytes
    unchanged: int = 0  # the key's document held these bytes already
    duplicate: int = 0  # these bytes are a document of this scope under another key
    failed: int = 0
    busy: int = 0

    @property
    def ingested(self) -> int:
        """Files whose key names a READY document with their bytes."""
        return self.added + self.replaced + self.unchanged

    def duplicates_note(self) -> str:
        return (f", {self.duplicate} duplicate(s) of documents already in it (not added)"
                if self.duplicate else "")


def report(results: list[FileResult], metadata_kept: Collection[str] = (),
           metadata_not_theirs: Collection[str] = ()) -> Tally:
    """One line per file (see the module docstring), and their counts; `metadata_kept`: the
    keys of duplicates whose given metadata was not applied (their lines say so);
    `metadata_not_theirs`: `sync`'s files duplicating another key's document, whose own
    metadata (sidecar, front matter) is never that document's."""
    tally = Tally()
    for result in results:
        path = escape(str(result.source.path))
        if result.outcome is None:
            tally.failed += 1
            err.print(f"[red]FAILED[/] {path}: {escape(result.error or '')}")
        else:
            _line(tally, path, result.source.key, result.outcome)
            if result.source.key in metadata_kept:
                out.print(f"  {path}: metadata left as it was (document "
                          f"{result.outcome.document.id} already holds these bytes); pass "
                          "--replace-meta to set it")
            if result.source.key in metadata_not_theirs:
                out.print(f"  {path}: {_metadata_source(result.source.path)} not applied: "
                          f"document {result.outcome.document.id} (key "
                          f"{escape(repr(result.outcome.document.key))}) already holds these "
                          "bytes, and a file's metadata changes only its own document")
    return tally


def _line(tally: Tally, path: str, key: str, outcome: IngestOutcome) -> None:
    document = outcome.document
    if outcome.conflict:
        tally.failed += 1
        why = (f"of another scope ({describe_scope(document.scope)})" if outcome.other_scope
               else "with other content")
        err.print(f"[red]NOT INGESTED[/] {path}: key {escape(repr(document.key))} is held by "
                  f"document {document.id} {why}; give the file another key (--key) or "
                  "delete that document first")
    elif outcome.replace_failed:
        tally.failed += 1
        err.print(f"[red]NOT REPLACED[/] {path}: {escape(document.error or '')}")
    elif document.status == DocumentStatus.FAILED:
        tally.failed += 1
        err.print(f"[red]FAILED[/] {path}: {escape(document.error or '')}")
    elif outcome.busy:
        tally.busy += 1
        err.print(f"[yellow]in progress elsewhere[/] {path} (document {document.id} is "
                  f"{document.status.value} in another live process)")
    elif document.status != DocumentStatus.READY:
        tally.failed += 1
        err.print(f"[red]{document.status.value}[/] {path}: not searchable")
    elif outcome.duplicate and document.key == key:
        tally.unchanged += 1
        out.print(f"[yellow]unchanged[/] {path} (document {document.id} holds these bytes)")
    elif outcome.duplicate:
        tally.duplicate += 1
        out.print(f"[yellow]duplicate[/] {path}: not added, already in this KB for this scope "
                  f"(document {document.id}, key {escape(repr(document.key))})")
    elif outcome.replaced:
        tally.replaced += 1
        out.print(f"[green]REPLACED[/] {path} -> {document.id} ({outcome.chunks} indexed chunks)")
    else:
        tally.added += 1
        out.print(f"[green]READY[/] {path} -> {document.id} ({outcome.chunks} indexed chunks)")


def describe_scope(scope: DocumentScope) -> str:
    """The access fields of a scope that are set, as `tenant 't1', roles 'hr'`."""
    tenant, dataset, visibility, roles = scope.access
    parts = [f"{name} {value!r}" for name, value in (
        ("tenant", tenant), ("dataset", dataset), ("visibility", visibility)) if value]
    if roles:
        parts.append("roles " + ", ".join(map(repr, roles)))
    return escape(", ".join(parts) or "no tenant, dataset, visibility or roles")


def _metadata_source(path: Path) -> str:
    """What gave a file's metadata in `sync`: its sidecar's name, or its front matter."""
    from ragsift.ingestion.sidecars import sidecar_of

    sidecar = sidecar_of(path)
    return escape(sidecar.name) if sidecar.is_file() else "front matter"
