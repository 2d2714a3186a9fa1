"""Replacing a document's content under its key: a new revision of the same document id.

The new bytes are parsed, chunked and embedded while the old revision stays READY and
searchable; then one version commit keeps the unchanged chunks (same ids, same vectors:
nothing is embedded again), adds the changed ones and retires the removed ones, so a search
sees the old revision or the new one, never both and never neither. A new file that fails
to parse leaves the old revision searchable, with the failure on the document.

A replacement is claimed with one statement (`document_busy` for a second one), and the
claim of a process that died is taken over; nothing of an interrupted replacement is
visible (its index rows are removed the next time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ragsift.domain.errors import DocumentBusy, DocumentRejected
from ragsift.domain.models import Document, DocumentStatus, Revision
from ragsift.ingestion.cleanup import discard_unstored
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.outcomes import IngestOutcome
from ragsift.ingestion.parsers import media_type_for
from ragsift.ingestion.preparation import Prepared
from ragsift.ingestion.recovery import load_document
from ragsift.ports import ObjectStore, Repository, SearchIndex
from ragsift.processes import is_dead, this_process
from ragsift.storage_full import StorageSpace, describe, log_failure
from ragsift.versions.writer import DraftWriter

logger = logging.getLogger(__name__)

Prepare = Callable[[Document, bytes, Progress | None, bool], Prepared]
ObjectKey = Callable[[Document], str]


__all__ = ["DocumentBusy", "Replacer"]


class Replacer:
    """Writes new content into an existing document (see the module docstring)."""

    def __init__(
        self, repository: Repository, index: SearchIndex, objects: ObjectStore,
        versions: DraftWriter | None, prepare: Prepare, object_key: ObjectKey,
        written: Callable[[Prepared], None] = lambda prepared: None,
        space: StorageSpace | None = None,
    ) -> None:
        self._repository = repository
        self._space = space or StorageSpace()
        self._index = index
        self._objects = objects
        self._versions = versions
        self._prepare = prepare
        self._object_key = object_key
        self._written = written  # told of the prepared content once stored

    def claim(self, document: Document) -> None:
        """Take the document for a replacement, or DocumentBusy."""
        me = this_process().token()
        current = self._repository.replacing_owner(document.id)
        stale = current if current is not None and is_dead(current) else None
        if (current is None or stale is not None) and self._repository.claim_replace(
                document.id, stale, me):
            return
        raise DocumentBusy(f"document {document.id!r} ({document.filename}) is being "
                           "ingested, reindexed or replaced; try again when it is READY")

    def replace(
        self, document: Document, filename: str, data: bytes, sha256: str,
        source_mtime: float | None = None, progress: Progress | None = None,
    ) -> IngestOutcome:
        """The claimed `document` with `data` as its content (see the module docstring)."""
        try:
            revision = Revision(sha256=sha256, size=len(data), filename=filename,
                                media_type=media_type_for(filename), source_mtime=source_mtime)
        except DocumentRejected as exc:
            self._repository.finish_replace(document.id, None, f"replacement refused: {exc}")
            return self._outcome(document.id, replace_failed=True)
        new = document.model_copy(update={"filename": filename,
                                          "media_type": revision.media_type})
        if document.status == DocumentStatus.FAILED or self._versions is None:
            return self._restart(new, revision, data)
        discard_unstored(self._repository, self._index, document)
        try:
            prepared = self._prepare(new, data, progress, False)
        except Exception as exc:
            reason = str(exc) if isinstance(exc, DocumentRejected) else describe(exc)
            logger.info("replacing %s failed: %s", document.filename, reason)
            self._repository.finish_replace(
                document.id, None, f"replacement failed, the previous content is kept: {reason}")
            return self._outcome(document.id, replace_failed=True)
        try:
            # the original first: a crash before the commit leaves the old chunks with the
            # new original, which the next replacement of the same bytes makes whole again
            self._objects.put(self._object_key(new), data)
            if self._object_key(new) != self._object_key(document):
                self._objects.delete_prefix(self._object_key(document))
            chunks = self._versions.write(new, prepared.chunks, prepared.vectors_by_text(),
                                          progress)
        except Exception as exc:
            log_failure(logger, exc, "replacing %s failed", document.filename)
            self._repository.finish_replace(
                document.id, None, f"replacement failed, the previous content is kept: "
                f"{self._space.reason(exc, len(data))}")
            return self._outcome(document.id, replace_failed=True)
        self._repository.finish_replace(document.id, revision)
        self._written(prepared)
        return self._outcome(document.id, chunks=chunks, replaced=True)

    def _restart(self, new: Document, revision: Revision, data: bytes) -> IngestOutcome:
        """A FAILED document (nothing of it searchable) takes the new content as a fresh
        ingestion of the same id: PENDING, for the caller to process."""
        self._objects.delete_prefix(f"{new.kb_id}/{new.id}/")
        self._objects.put(self._object_key(new), data)
        self._repository.finish_replace(new.id, revision)
        self._repository.set_status(new.id, DocumentStatus.PENDING)
        self._repository.set_owner(new.id, this_process().token())
        return self._outcome(new.id, replaced=True)

    def _outcome(self, document_id: str, **flags: Any) -> IngestOutcome:
        """The document as it is now, with what became of the replacement."""
        return IngestOutcome(load_document(self._repository, document_id), **flags)
