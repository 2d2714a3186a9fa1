"""Finishing what a dead process left: unfinished documents are taken over and redone.

Every unfinished document names its owner (ragsift/processes.py). A process that finds one
whose owner is dead takes it over with one compare-and-set (so two never both do), removes
what the interrupted write left in the index but not in the facts, and hands it back to be
processed from its stored original; a document being deleted is deleted.
"""

from __future__ import annotations

import logging

from ragsift.domain.errors import NotFound
from ragsift.domain.models import Document, DocumentStatus
from ragsift.ingestion.assets import AssetKeeper
from ragsift.ingestion.cleanup import discard_unstored
from ragsift.ingestion.outcomes import IngestOutcome
from ragsift.ports import ObjectStore, Repository, SearchIndex
from ragsift.processes import is_dead, this_process

logger = logging.getLogger(__name__)


class Recovery:
    """Takes over and cleans the documents of dead processes."""

    def __init__(
        self, repository: Repository, index: SearchIndex, objects: ObjectStore,
        assets: AssetKeeper | None = None,
    ) -> None:
        self._repository = repository
        self._index = index
        self._objects = objects
        self._assets = assets or AssetKeeper(repository, objects)

    def recover(self, kb_id: str | None = None) -> list[str]:
        """Take over the unfinished documents whose process died; ids to process again.

        A document being deleted is deleted. What an interrupted write left in the index is
        removed now; the returned documents are PENDING and owned by this process.
        """
        me = this_process().token()
        resumed: list[str] = []
        for document, owner in self._repository.unfinished_documents(kb_id):
            if owner == me or not is_dead(owner):
                continue
            if not self._repository.take_over(document.id, owner, me):
                continue  # another process took it over first
            if document.status == DocumentStatus.DELETING:
                self.finish_delete(document)
                continue
            discard_unstored(self._repository, self._index, document)
            self._repository.set_status(document.id, DocumentStatus.PENDING)
            resumed.append(document.id)
        for document_id, replacing in self._repository.replacements(kb_id):
            if is_dead(replacing):  # the old content stayed searchable; say what was lost
                self._repository.finish_replace(
                    document_id, None, "replacement interrupted (the process writing it "
                    "stopped); the previous content is kept: send the file again")
        if kb_id is not None:
            # a failure whose index cleanup failed too (a full disk) is finished here
            for failed in self._repository.list_documents(kb_id, DocumentStatus.FAILED):
                discard_unstored(self._repository, self._index, failed)
        if resumed:
            logger.info("resuming %d document(s) an interrupted process left unfinished",
                        len(resumed))
        return resumed

    def owned_here(self, document: Document) -> bool:
        """Whether this process is finishing `document` (registered or taken over by it)."""
        return self._repository.document_owner(document.id) == this_process().token()

    def resume_or_busy(self, document: Document) -> IngestOutcome:
        """An unfinished document of the same bytes: ours to finish, or another live one's."""
        me = this_process().token()
        owner = self._repository.document_owner(document.id)
        if owner == me or (is_dead(owner) and self._repository.take_over(document.id, owner, me)):
            if owner != me:
                discard_unstored(self._repository, self._index, document)
                self._repository.set_status(document.id, DocumentStatus.PENDING)
            return IngestOutcome(load_document(self._repository, document.id), resumed=True)
        return IngestOutcome(document, busy=True)

    def finish_delete(self, document: Document) -> None:
        """Index rows, original and facts of a DELETING document, in that order; then the
        bytes of its images that no other document of the KB holds."""
        images = self._assets.before_delete(document.id)
        self._index.delete_document(document.id)
        self._objects.delete_prefix(f"{document.kb_id}/{document.id}")
        self._repository.delete_document(document.id)
        self._assets.after_delete(images)


def load_document(repository: Repository, document_id: str) -> Document:
    """The document as stored now; NotFound when it is gone (deleted meanwhile)."""
    document = repository.get_document(document_id)
    if document is None:
        raise NotFound(f"document {document_id!r} does not exist")
    return document
