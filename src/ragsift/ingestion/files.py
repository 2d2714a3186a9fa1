"""Files on disk as documents: their keys, ingesting them, and a folder sync's plan.

A file's key is its path relative to the folder given (or its name, for a file given
directly); the same key again replaces the document (ingestion/revisions.py). A folder sync
compares the folder with the KB's keyed documents: size and mtime first, sha256 to confirm.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragsift.domain.errors import InvalidInput
from ragsift.domain.keys import normalize_key
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.faults import crash_point
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.outcomes import UNFINISHED, IngestOutcome
from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS
from ragsift.ingestion.pipeline import IngestionService, NewFile
from ragsift.ingestion.sidecars import is_sidecar
from ragsift.storage_full import is_storage_full


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path
    key: str


@dataclass(frozen=True, slots=True)
class FileResult:
    """One file's outcome, or why it was not ingested at all (`error`)."""

    source: SourceFile
    outcome: IngestOutcome | None = None
    error: str | None = None


@dataclass
class Found:
    """The files of some paths, and those skipped (hidden, unsupported) with why."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def find_files(
    paths: Sequence[Path], include: Sequence[str] = (), exclude: Sequence[str] = (),
    key: str | None = None,
) -> Found:
    """The files under `paths` (folders recurse) with their keys; `key` names a single file."""
    found = Found()
    for root in paths:
        if not root.exists():
            raise InvalidInput(f"no such file or directory: {root}")
        if not root.is_dir():
            found.files.append(SourceFile(root, key or root.name))
            continue
        try:
            entries = sorted(root.rglob("*"))
        except OSError as exc:
            raise InvalidInput(f"cannot read folder {root}: {exc}") from exc
        for path in entries:
            relative = path.relative_to(root)
            if not path.is_file():
                continue
            name = relative.as_posix()
            if is_sidecar(path):  # metadata of the file beside it (ingestion/sidecars.py)
                continue
            if _hidden(relative):
                found.skipped.append((path, "hidden"))
            elif not _selected(name, include, exclude):
                continue
            elif path.suffix.lower() not in SUPPORTED_EXTENSIONS:
                found.skipped.append((path, f"unsupported type {path.suffix or '(none)'}"))
            else:
                found.files.append(SourceFile(path, name))
    if key is not None and len(found.files) != 1:
        raise InvalidInput("--key names one file; give exactly one")
    return found


def _selected(name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    if include and not any(fnmatch.fnmatchcase(name, glob) for glob in include):
        return False
    return not any(fnmatch.fnmatchcase(name, glob) for glob in exclude)


def key_conflicts(files: Iterable[SourceFile]) -> dict[str, list[SourceFile]]:
    """Keys that more than one file maps to (after normalisation); bad keys map to ''."""
    by_key: dict[str, list[SourceFile]] = defaultdict(list)
    for source in files:
        try:
            by_key[normalize_key(source.key)].append(source)
        except InvalidInput:
            continue
    return {key: sources for key, sources in by_key.items() if len(sources) > 1}


def ingest_files(
    service: IngestionService, kb: KnowledgeBase, files: Sequence[SourceFile],
    scope: DocumentScope | None = None, progress: Progress | None = None,
    registered: Callable[[list[tuple[SourceFile, Document]]], None] | None = None,
) -> tuple[list[FileResult], list[str]]:
    """Ingest or replace each file under its key; (results in order, ids resumed first).

    Documents an interrupted run left unfinished are finished too; files sharing one key
    fail, and nothing is ingested for that key. `registered` is told the files registered
    to be processed (with their documents) before any is: metadata set then is indexed
    with the chunks (metadata_terms.py) instead of being changed after them.
    """
    resumed = service.recover(kb.id)
    clashes = key_conflicts(files)
    results: dict[int, FileResult] = {}
    pending: list[tuple[int, str]] = []
    size = service.batch_documents
    for start in range(0, len(files), size):
        for i, (result, document_id) in _accept_batch(
                service, kb, files, range(start, min(start + size, len(files))), scope,
                clashes).items():
            results[i] = result
            if document_id is not None:
                pending.append((i, document_id))
    crash_point("registered")
    if registered is not None:
        outcomes = [(files[i], results[i].outcome) for i, _ in pending]
        registered([(source, outcome.document) for source, outcome in outcomes
                    if outcome is not None])
    todo = list(dict.fromkeys([*resumed, *(document_id for _, document_id in pending)]))
    processed = dict(zip(todo, service.process_many(todo, progress), strict=True))
    for i, document_id in pending:
        results[i] = FileResult(files[i], processed[document_id])
    for i, result in results.items():  # a duplicate of a document this run finished
        outcome = result.outcome
        if outcome is not None and outcome.duplicate and outcome.document.id in processed:
            finished = processed[outcome.document.id].document
            results[i] = FileResult(files[i], replace(outcome, document=finished))
    return [results[i] for i in range(len(files))], resumed


def _accept_batch(
    service: IngestionService, kb: KnowledgeBase, files: Sequence[SourceFile],
    batch: range, scope: DocumentScope | None, clashes: dict[str, list[SourceFile]],
) -> dict[int, tuple[FileResult, str | None]]:
    """_accept() of the files at `batch`: the plainly new ones registered together first
    (one transaction), then the others one by one, in order."""
    read: dict[int, NewFile] = {}
    for i in batch:
        source = files[i]
        try:
            key = normalize_key(source.key)
            stat = source.path.stat()
            if key in clashes or stat.st_size > service.max_file_bytes:
                continue  # _accept says why, without reading the file
            read[i] = NewFile(source.path.name, source.path.read_bytes(), key, stat.st_mtime)
        except (InvalidInput, OSError):
            continue  # _accept reports it
    registered = dict(zip(read, service.register_new(kb, list(read.values()), scope),
                          strict=True))
    done: dict[int, tuple[FileResult, str | None]] = {}
    for i in batch:
        outcome = registered.get(i)
        done[i] = ((FileResult(files[i], outcome), outcome.document.id) if outcome is not None
                   else _accept(service, kb, files[i], scope, clashes))
    return done


def _accept(
    service: IngestionService, kb: KnowledgeBase, source: SourceFile,
    scope: DocumentScope | None, clashes: dict[str, list[SourceFile]],
) -> tuple[FileResult, str | None]:
    """The file accepted (or replaced); the id still to process, if any."""
    try:
        key = normalize_key(source.key)
        if key in clashes:
            others = ", ".join(str(s.path) for s in clashes[key])
            return FileResult(source, error=f"key {key!r} is given by {others}; nothing "
                              "is ingested for it"), None
        mtime = source.path.stat().st_mtime
        outcome = service.accept_path(kb, source.path, scope, key=key, source_mtime=mtime)
        if outcome.replacing:
            outcome = service.replace(outcome.document.id, source.path.name,
                                      source.path.read_bytes(), mtime)
    except (InvalidInput, OSError) as exc:
        if is_storage_full(exc):  # the original could not be stored
            return FileResult(source, error=service.storage.reason(exc)), None
        return FileResult(source, error=str(exc)), None
    except Exception as exc:  # the facts could not take the document: its file alone fails
        if not is_storage_full(exc):
            raise
        return FileResult(source, error=service.storage.reason(exc)), None
    waiting = (outcome.document.status == DocumentStatus.PENDING
               and not (outcome.duplicate or outcome.busy or outcome.replace_failed
                        or outcome.conflict))
    return FileResult(source, outcome), outcome.document.id if waiting else None


@dataclass
class SyncPlan:
    """What a sync will do: add, replace, delete (with --prune) and leave unchanged."""

    add: list[SourceFile] = field(default_factory=list)
    replace: list[tuple[SourceFile, Document]] = field(default_factory=list)
    delete: list[Document] = field(default_factory=list)
    unchanged: list[tuple[SourceFile, Document]] = field(default_factory=list)
    touched: list[tuple[SourceFile, Document]] = field(default_factory=list)  # same bytes
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    conflicts: dict[str, list[SourceFile]] = field(default_factory=dict)
    # new files whose bytes a READY document of the scope holds under another key: not
    # added (one document per content and scope), reported as duplicates on every run
    duplicates: list[tuple[SourceFile, Document]] = field(default_factory=list)
    # documents to delete that hold an added file's bytes: deleted before the adds, or the
    # add would find them and be a duplicate of a document about to go
    delete_first: list[Document] = field(default_factory=list)
    # an added file holds the bytes a replaced document has now: the replacements run first
    replace_first: bool = False

    def todo(self) -> list[SourceFile]:
        """The files to ingest, in the order that keeps every content findable."""
        replaced = [source for source, _ in self.replace]
        return replaced + self.add if self.replace_first else self.add + replaced


def plan_sync(
    found: Found, documents: dict[str, Document], prune: bool,
    include: Sequence[str] = (), exclude: Sequence[str] = (),
    scope: DocumentScope | None = None,
) -> SyncPlan:
    """Compare a folder's files with the KB's keyed documents (see the module docstring)."""
    plan = SyncPlan(skipped=list(found.skipped), conflicts=key_conflicts(found.files))
    seen: set[str] = set()
    for source in found.files:
        key = normalize_key(source.key)
        seen.add(key)
        if key in plan.conflicts:
            continue
        document = documents.get(key)
        if document is None or _never_searchable(document, source.path):
            plan.add.append(source)
            continue
        stat = source.path.stat()
        if (document.status == DocumentStatus.READY and document.size == stat.st_size
                and document.source_mtime == stat.st_mtime):
            plan.unchanged.append((source, document))
        elif document.status == DocumentStatus.READY and document.sha256 == _sha256(source.path):
            plan.touched.append((source, document))  # same bytes, new mtime
        else:
            plan.replace.append((source, document))
    if prune:
        plan.delete = [document for key, document in sorted(documents.items())
                       if key not in seen and _selected(key, include, exclude)]
    _split_duplicates(plan, documents.values(), scope or DocumentScope())
    return plan


def _split_duplicates(plan: SyncPlan, documents: Iterable[Document],
                      scope: DocumentScope) -> None:
    """Move the new files whose bytes a READY keyed document of `scope` holds to
    `duplicates`; when that document is to be deleted or replaced, keep the add and delete or
    replace it first. Registration decides the same way (ingestion/registration.py); the
    plan says it ahead, so a folder holding a copy does not plan "add" on every sync."""
    deleted = {document.id for document in plan.delete}
    replaced = {document.id for _, document in plan.replace}
    held: dict[str, Document] = {}
    for document in documents:
        if (document.status == DocumentStatus.READY and document.sha256
                and document.scope.access == scope.access):
            held.setdefault(document.sha256, document)
    if not held or not plan.add:
        return
    adds: list[SourceFile] = []
    first: dict[str, Document] = {}
    for source in plan.add:
        twin = held.get(_sha256(source.path))
        if twin is None:
            adds.append(source)
        elif twin.id in deleted:
            adds.append(source)
            first[twin.id] = twin
        elif twin.id in replaced:
            adds.append(source)
            plan.replace_first = True
        else:
            plan.duplicates.append((source, twin))
    plan.add = adds
    plan.delete_first = list(first.values())


def _never_searchable(document: Document, path: Path) -> bool:
    """A document a killed run left unfinished, or one that FAILED with these bytes: the
    sync finishes or retries it as a new one (never a replacement of searchable content)."""
    return document.status in UNFINISHED or (
        document.status == DocumentStatus.FAILED and document.sha256 == _sha256(path))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
