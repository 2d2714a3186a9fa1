"""A document's facts as the pipeline moves it: reloads, failure, its original's object key.

Status moves of many documents at once (PARSING, INDEXING) are one statement each
(Repository.claim_documents, set_statuses); READY comes with the chunks in the batch write
(ingestion/batch_write.py), FAILED one document at a time, here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import PurePath

from ragsift.domain.errors import NotFound, StorageFull
from ragsift.domain.models import Document, DocumentStatus
from ragsift.ingestion.cleanup import discard_unstored
from ragsift.ingestion.recovery import load_document
from ragsift.ports import Repository, SearchIndex
from ragsift.storage_full import StorageSpace, describe, is_storage_full, log_failure
from ragsift.versions.writer import DraftWriter

logger = logging.getLogger(__name__)


class DocumentStates:
    """Reads documents again and records their failures."""

    def __init__(
        self, repository: Repository, index: SearchIndex, versions: DraftWriter | None,
        space: StorageSpace | None = None,
    ) -> None:
        self._repository = repository
        self._index = index
        self._versions = versions
        self.space = space or StorageSpace()

    def reload(self, document_id: str) -> Document:
        """The document as stored now; NotFound when it is gone."""
        return load_document(self._repository, document_id)

    def reload_many(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """reload() of several documents in one query; NotFound when one is gone."""
        found = self._repository.get_documents(document_ids)
        missing(document_ids, found)
        return found

    def fail(self, document: Document, reason: str) -> Document:
        """The document FAILED with `reason`, after removing what it left in the index."""
        try:
            if self._versions is None:
                self._index.delete_document(document.id)
            else:  # versions keep what they hold; what no version holds goes
                discard_unstored(self._repository, self._index, document)
        except Exception as exc:  # the FAILED status matters more than index cleanup
            log_failure(logger, exc, "could not remove chunks of failed document %s",
                        document.id)
        self._repository.set_status(document.id, DocumentStatus.FAILED, reason)
        return self.reload(document.id)

    def fail_on(
        self, document: Document, exc: BaseException, needed: int | None = None
    ) -> Document:
        """fail() with the reason `exc` gives: on a full disk, where and how much space.

        A full disk may refuse even the FAILED status (SQLite mostly still takes it: the
        rolled-back write freed its pages). Then StorageFull stops the run and the document
        stays unfinished and owned by this process: the next run's recovery resumes it.
        """
        reason = self.space.reason(exc, needed)
        try:
            return self.fail(document, reason)
        except Exception as second:
            if not (is_storage_full(exc) or is_storage_full(second)):
                raise
            logger.warning("document %s could not be marked FAILED (%s); the next run "
                           "resumes it", document.id, describe(second))
            full = self.space.error(exc, needed)
            raise StorageFull(f"{full}; {document.filename} could not be marked FAILED and "
                              "is resumed by the next run", full.needed_bytes,
                              full.free_bytes) from second


def missing(document_ids: Sequence[str], found: dict[str, Document]) -> None:
    """NotFound for the first of `document_ids` not in `found` (deleted meanwhile)."""
    for document_id in document_ids:
        if document_id not in found:
            raise NotFound(f"document {document_id!r} does not exist")


def object_key(document: Document) -> str:
    """Where a document's original is kept in the object store."""
    # user-given names never become paths: keep only a tame basename
    safe = re.sub(r"[^\w.\-]", "_", PurePath(document.filename.replace("\\", "/")).name)
    return f"{document.kb_id}/{document.id}/{safe.strip('.') or 'original'}"
