"""Knowledge-base maintenance: rebuild the BM25 side from the facts, re-parse the originals.

Both run while searches go on. A BM25 rebuild builds the new index beside the live one and
switches atomically (the index does that); a reindex re-parses one document at a time, and
each document is hidden from search (not READY) only while its own re-parse runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.models import CHILD_LEVEL, Document, DocumentStatus, KnowledgeBase
from ragsift.faults import crash_point
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ingestion.preparation import index_records
from ragsift.ports import Repository, SearchIndex, SparseRebuildable
from ragsift.retrieval.faq import faq_records

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SparseRebuildReport:
    """What one knowledge base's BM25 rebuild indexed."""

    kb_id: str
    kb_name: str
    chunks: int
    faq_entries: int


@dataclass(frozen=True, slots=True)
class ReindexOutcome:
    """One document after a reindex: its new state, or why it was skipped."""

    document: Document
    chunks: int = 0
    skipped: str | None = None


def _rebuildable(index: SearchIndex, what: str) -> SparseRebuildable:
    if not isinstance(index, SparseRebuildable):
        raise InvalidInput(
            f"the {what} index ({type(index).__name__}) computes BM25 itself from the stored "
            "text; there is no separate BM25 side to rebuild"
        )
    return index


class MaintenanceService:
    """Rebuilds BM25 from the facts and re-parses documents from their stored originals.

    `settle_s`: with ingestion running in this process (the API), how long a BM25 rebuild
    waits for documents that are INDEXING when it starts. Such a document may have written
    the index already and not the facts yet, so the facts read would miss it; it leaves
    INDEXING right after its chunks reach the facts. One still INDEXING after `settle_s` is
    still embedding (its index write comes later and is replayed onto the new index) or was
    abandoned by a crash (not READY, so never searched, and reindexed when recovered).
    """

    def __init__(
        self, repository: Repository, index: SearchIndex, faq_index: SearchIndex,
        ingestion: IngestionService, settle_s: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._repository = repository
        self._index = index
        self._faq_index = faq_index
        self._ingestion = ingestion
        self._settle_s = settle_s
        self._sleep = sleep

    def rebuild_sparse(self, kb: KnowledgeBase) -> SparseRebuildReport:
        """Rebuild the BM25 index of a KB's chunks and of its FAQ entries from the facts."""
        index = _rebuildable(self._index, "document")
        chunks = 0
        with index.rebuild_sparse(kb.id) as rebuild:
            self._settle(kb)
            # Every chunk the facts hold, whatever its document's status: KB versions keep
            # serving rows of documents being re-parsed or retired, and searches re-check
            # every hit against the facts anyway. Writes of ingestions running meanwhile
            # are journaled and replayed onto the new index.
            for document in self._repository.list_documents(kb.id):
                if document.status == DocumentStatus.DELETING:
                    continue
                children = [
                    chunk for chunk in self._repository.list_chunks(document.id)
                    if chunk.level == CHILD_LEVEL
                ]
                # the very records ingestion writes (scope fields included)
                rebuild.add(index_records(document, children))
                chunks += len(children)
            crash_point("sparse_built")
        entries = self._repository.list_faq_entries(kb.id)
        with _rebuildable(self._faq_index, "FAQ").rebuild_sparse(kb.id) as rebuild:
            rebuild.add(faq_records(entries))
        logger.info("rebuilt BM25 of kb %s: %d chunks, %d FAQ entries", kb.name, chunks,
                    len(entries))
        return SparseRebuildReport(kb.id, kb.name, chunks, len(entries))

    def fill_second_dense(self, kb: KnowledgeBase, batch: int = 512) -> int:
        """Give the second dense channel the KB's chunks it lacks (indexed before it was on);
        returns how many were encoded. Nothing else is re-embedded or re-parsed."""
        fill = getattr(self._index, "fill_second_dense", None)
        if fill is None or getattr(self._index, "second_dense_model", None) is None:
            raise InvalidInput("this index has no second dense channel (RAGSIFT_SECOND_DENSE "
                               "and the `use` extra; the Milvus index has none)")
        filled, pending = 0, []
        for document in self._repository.list_documents(kb.id):
            if document.status == DocumentStatus.DELETING:
                continue
            children = [chunk for chunk in self._repository.list_chunks(document.id)
                        if chunk.level == CHILD_LEVEL]
            pending.extend(index_records(document, children))
            if len(pending) >= batch:
                filled += fill(pending)
                pending = []
                crash_point("second_dense_filled")
        filled += fill(pending) if pending else 0
        logger.info("second dense channel of kb %s: %d chunks filled", kb.name, filled)
        return filled

    def sparse_upgrade_pending(self) -> bool:
        """Whether an outdated BM25 layout waits for every KB to be rebuilt."""
        return any(
            isinstance(index, SparseRebuildable) and index.sparse_upgrade_pending
            for index in (self._index, self._faq_index)
        )

    def rebuild_sparse_all(
        self, done: Callable[[SparseRebuildReport], None] | None = None
    ) -> list[SparseRebuildReport]:
        """rebuild_sparse() for every KB; completes a pending layout upgrade."""
        reports: list[SparseRebuildReport] = []
        for kb in self._repository.list_kbs():
            reports.append(self.rebuild_sparse(kb))
            if done is not None:
                done(reports[-1])
        for index in (self._index, self._faq_index):
            if isinstance(index, SparseRebuildable):
                index.finish_sparse_upgrade()
        return reports

    def _settle(self, kb: KnowledgeBase) -> None:
        if self._settle_s <= 0:
            return
        deadline = time.monotonic() + self._settle_s
        waiting = {d.id for d in self._repository.list_documents(kb.id, DocumentStatus.INDEXING)}
        while waiting and time.monotonic() < deadline:
            self._sleep(0.05)
            now = self._repository.list_documents(kb.id, DocumentStatus.INDEXING)
            waiting &= {d.id for d in now}
        if waiting:
            logger.info("BM25 rebuild of kb %s: %d document(s) still INDEXING after %.0f s",
                        kb.name, len(waiting), self._settle_s)

    def documents_to_reindex(
        self, kb: KnowledgeBase, document_ids: Sequence[str] | None = None
    ) -> list[Document]:
        """The named documents of `kb` (InvalidInput for one not in it), or all of them."""
        if document_ids is None:
            return [d for d in self._repository.list_documents(kb.id)
                    if d.status != DocumentStatus.DELETING]
        documents: list[Document] = []
        for document_id in dict.fromkeys(document_ids):
            document = self._repository.get_document(document_id)
            if document is None or document.kb_id != kb.id:
                raise InvalidInput(
                    f"document {document_id!r} is not in knowledge base {kb.name!r}"
                )
            documents.append(document)
        return documents

    def reindex(
        self, kb: KnowledgeBase, document_ids: Sequence[str] | None = None,
        progress: Progress | None = None, done: Callable[[ReindexOutcome], None] | None = None,
    ) -> list[ReindexOutcome]:
        """Re-parse documents of `kb` from their stored originals, one after the other.

        For a caller that holds the data directory alone (the CLI): documents left
        unfinished by a crash are re-parsed too. A document whose original was never stored
        (rejected on upload) is skipped with the reason.
        """
        outcomes: list[ReindexOutcome] = []
        # what a killed ingest or reindex left unfinished is redone too (taken over first,
        # so the document is ours: see IngestionService.recover)
        resumed = self._ingestion.recover(kb.id)
        if document_ids is not None:
            document_ids = list(dict.fromkeys([*document_ids, *resumed]))
        for document in self.documents_to_reindex(kb, document_ids):
            if document.status == DocumentStatus.DELETING:
                outcomes.append(ReindexOutcome(document, skipped="the document is being deleted"))
                continue
            try:
                result = self._ingestion.reindex(document.id, progress)
                outcome = ReindexOutcome(result.document, result.chunks)
            except NotFound as exc:
                outcome = ReindexOutcome(document, skipped=str(exc))
            outcomes.append(outcome)
            if done is not None:
                done(outcome)
        return outcomes
