"""Registering a file: its original stored and its document PENDING (or FAILED), no parsing.

A file's key names it in the KB; the same bytes under the same key change nothing, other
bytes under a taken key are a replacement (ingestion/revisions.py), and a document whose
process died is resumed (ingestion/recovery.py). A key held by a document of another access
scope (tenant, dataset, visibility, roles) is a conflict: the file is never written into a
document its caller could not find. The same bytes under another key are a duplicate only
of a document of the same access scope (as FAQ entries are); another scope's copy becomes a
document of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ragsift.domain.errors import DocumentBusy, DocumentRejected, InvalidInput
from ragsift.domain.keys import normalize_key
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.faults import crash_point
from ragsift.ingestion.outcomes import UNFINISHED, IngestOutcome
from ragsift.ingestion.parsers import media_type_for
from ragsift.ingestion.recovery import Recovery
from ragsift.ingestion.revisions import Replacer
from ragsift.ingestion.states import DocumentStates, object_key
from ragsift.ports import ObjectStore, Repository
from ragsift.processes import is_dead, this_process
from ragsift.storage_full import describe, log_failure

logger = logging.getLogger(__name__)

# deleted (from the draft, kept only for older versions): never the twin of a new file
_GONE = (DocumentStatus.DELETING, DocumentStatus.RETIRED)


@dataclass(frozen=True, slots=True)
class NewFile:
    """A file's bytes to register under its (normalised) key."""

    filename: str
    data: bytes
    key: str
    source_mtime: float | None = None


class Registrar:
    """Accepts files as documents; `delete` removes a document outright (a retry's old one)."""

    def __init__(
        self, repository: Repository, objects: ObjectStore, max_bytes: int,
        states: DocumentStates, replacer: Replacer, recovery: Recovery,
        delete: Callable[[str], None],
    ) -> None:
        self._repository = repository
        self._objects = objects
        self._max_bytes = max_bytes
        self._states = states
        self._replacer = replacer
        self._recovery = recovery
        self._delete = delete

    def accept_path(
        self, kb: KnowledgeBase, path: Path, scope: DocumentScope | None = None,
        key: str | None = None, source_mtime: float | None = None,
    ) -> IngestOutcome:
        """accept() for a file on disk; an oversized file is rejected before it is read."""
        size = path.stat().st_size
        if size > self._max_bytes:
            reason = f"file is {size} bytes, over the limit of {self._max_bytes} bytes"
            return IngestOutcome(self.failed(kb, path.name, None, size, reason, scope,
                                             normalize_key(key or path.name)))
        return self.accept(kb, path.name, path.read_bytes(), scope, key=key,
                           source_mtime=source_mtime)

    def accept(
        self, kb: KnowledgeBase, filename: str, data: bytes, scope: DocumentScope | None = None,
        key: str | None = None, source_mtime: float | None = None, replace: bool = True,
    ) -> IngestOutcome:
        """See IngestionService.accept."""
        key = normalize_key(key or filename)
        if len(data) > self._max_bytes:
            reason = f"file is {len(data)} bytes, over the limit of {self._max_bytes} bytes"
            return IngestOutcome(self.failed(kb, filename, None, len(data), reason, scope, key))
        sha = hashlib.sha256(data).hexdigest()
        keyed, hashed = self._repository.find_document_by_key_or_sha256(kb.id, key, sha)
        if keyed is not None and scope is not None and keyed.scope.access != scope.access:
            return IngestOutcome(keyed, conflict=True, other_scope=True)
        if keyed is not None and keyed.sha256 != sha and keyed.status not in UNFINISHED:
            if not replace:
                return IngestOutcome(keyed, conflict=True)
            self._replacer.claim(keyed)
            return IngestOutcome(keyed, replacing=True)
        if keyed is not None and keyed.sha256 != sha:  # still being ingested
            if not is_dead(self._repository.document_owner(keyed.id)):
                raise DocumentBusy(f"document {keyed.id!r} ({keyed.key}) is being ingested; "
                                   "replace it once it is READY or FAILED")
            self._delete(keyed.id)  # abandoned, never searchable: start over
            keyed = None
        existing = keyed or _twin(hashed, scope or DocumentScope())
        if existing is not None and existing.status in UNFINISHED:
            if keyed is None and self._recovery.owned_here(existing):
                # the same bytes under another key, registered earlier in this run: one
                # document, which that key's file finishes; this file is its duplicate
                return IngestOutcome(existing, duplicate=True)
            return self._recovery.resume_or_busy(existing)
        if existing is not None and existing.status != DocumentStatus.FAILED:
            return IngestOutcome(existing, duplicate=True)
        if existing is not None:
            self._delete(existing.id)  # a failed attempt is retried from scratch
        return self._register(kb, filename, data, sha, scope, key, source_mtime)

    def register_new(
        self, kb: KnowledgeBase, files: Sequence[NewFile], scope: DocumentScope | None = None,
    ) -> list[IngestOutcome | None]:
        """The plainly new files among `files` registered together, None for the others.

        New: no document of the KB holds the key or the bytes, nor an earlier file of the
        batch the bytes, the type is supported and the size within the limit. Their
        originals are stored first, then their documents created PENDING in one
        transaction: a kill in between leaves only unnamed originals, never a document
        without its original. The others (and all of them when the transaction fails, a
        concurrent writer's clash) are for accept(), one by one, after these.
        """
        shas = [_sha(file.data) for file in files]
        taken_keys, taken_shas = self._repository.documents_by_keys_or_sha256(
            kb.id, [file.key for file in files], shas)
        fresh: dict[int, Document] = {}
        for i, (file, sha) in enumerate(zip(files, shas, strict=True)):
            if file.key in taken_keys or sha in taken_shas:
                continue
            document = self._new_document(kb, file, sha, scope)
            if document is not None:
                taken_keys.add(file.key)
                taken_shas.add(sha)
                fresh[i] = document
        stored = self._store_originals(fresh, files)
        if not stored:
            return [None] * len(files)
        crash_point("originals_stored")
        try:
            added = self._repository.add_documents(list(stored.values()),
                                                   this_process().token())
        except InvalidInput as exc:
            logger.info("registering %d files together failed (%s); one by one", len(stored), exc)
            for document in stored.values():
                self._objects.delete_prefix(f"{document.kb_id}/{document.id}")
            return [None] * len(files)
        registered = dict(zip(stored, added, strict=True))
        return [IngestOutcome(registered[i]) if i in registered else None
                for i in range(len(files))]

    def _new_document(
        self, kb: KnowledgeBase, file: NewFile, sha: str, scope: DocumentScope | None
    ) -> Document | None:
        """A PENDING document for `file`, or None when it needs accept()'s checks."""
        if len(file.data) > self._max_bytes:
            return None
        try:
            media_type = media_type_for(file.filename)
        except DocumentRejected:
            return None
        return Document(
            id=uuid.uuid4().hex, kb_id=kb.id, filename=file.filename, media_type=media_type,
            sha256=sha, size=len(file.data), status=DocumentStatus.PENDING,
            scope=scope or DocumentScope(), created_at=datetime.now(UTC), key=file.key,
            source_mtime=file.source_mtime,
        )

    def _store_originals(
        self, fresh: dict[int, Document], files: Sequence[NewFile]
    ) -> dict[int, Document]:
        """The documents whose original could be stored (the rest go through accept())."""
        stored: dict[int, Document] = {}
        for i, document in fresh.items():
            try:
                self._objects.put(object_key(document), files[i].data)
            except Exception as exc:
                logger.warning("storing the original of %s failed (%s); registering it alone",
                               document.filename, describe(exc))
                continue
            stored[i] = document
        return stored

    def _register(
        self, kb: KnowledgeBase, filename: str, data: bytes, sha: str,
        scope: DocumentScope | None, key: str, source_mtime: float | None,
    ) -> IngestOutcome:
        """A new PENDING document of ours, then its original stored (FAILED if that fails)."""
        try:
            media_type = media_type_for(filename)
        except DocumentRejected as exc:
            return IngestOutcome(self.failed(kb, filename, sha, len(data), str(exc), scope, key))
        document = self._repository.add_document(
            Document(
                id=uuid.uuid4().hex, kb_id=kb.id, filename=filename, media_type=media_type,
                sha256=sha, size=len(data), status=DocumentStatus.PENDING,
                scope=scope or DocumentScope(), created_at=datetime.now(UTC), key=key,
                source_mtime=source_mtime,
            ),
            owner=this_process().token(),
        )
        try:
            self._objects.put(object_key(document), data)
        except Exception as exc:
            log_failure(logger, exc, "storing the original of %s failed", filename)
            return IngestOutcome(self._states.fail_on(document, exc, len(data)))
        return IngestOutcome(document)

    def failed(
        self, kb: KnowledgeBase, filename: str, sha: str | None, size: int, reason: str,
        scope: DocumentScope | None, key: str | None = None,
    ) -> Document:
        """A new document FAILED with `reason` (a file refused before it was parsed)."""
        media_type = "application/octet-stream"
        with contextlib.suppress(DocumentRejected):
            media_type = media_type_for(filename)
        return self._repository.add_document(
            Document(
                id=uuid.uuid4().hex, kb_id=kb.id, filename=filename, media_type=media_type,
                sha256=sha, size=size, status=DocumentStatus.FAILED, error=reason,
                scope=scope or DocumentScope(), created_at=datetime.now(UTC),
                key=self._free_key(kb, key),
            )
        )

    def _free_key(self, kb: KnowledgeBase, key: str | None) -> str | None:
        """`key`, unless another document holds it (a rejected replacement keeps none)."""
        if key is None or self._repository.find_document_by_key(kb.id, key) is not None:
            return None
        return key


def _twin(hashed: Sequence[Document], scope: DocumentScope) -> Document | None:
    """The document of the same bytes that a file of `scope` duplicates: one the same
    callers see (access scope; not the source label), live, not FAILED if one is not."""
    same = [d for d in hashed if d.scope.access == scope.access and d.status not in _GONE]
    return next((d for d in same if d.status != DocumentStatus.FAILED), None) or next(
        iter(same), None)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
