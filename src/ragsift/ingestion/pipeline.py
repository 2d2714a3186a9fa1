"""IngestionService: PENDING -> PARSING -> INDEXING -> READY | FAILED.

A bad document ends FAILED with its reason and never affects the rest of the knowledge base.
Chunks reach the index before the document is READY, but search re-checks READY in the facts,
so nothing of a document is visible before it is complete.

Every unfinished document names its owner, the process working on it (ragsift/processes.py);
`recover` (ingestion/recovery.py) takes over those whose owner died. The steps live in their
own modules: registration.py (accept), dispatch.py (parse, chunk, embed), batch_write.py
(index and facts of a batch), states.py (reloads and failures), revisions.py (replace).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ragsift.domain.assets import Asset, asset_object_key
from ragsift.domain.errors import DocumentBusy, DocumentRejected, InvalidInput
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.ingestion.assets import AssetKeeper
from ragsift.ingestion.batch_write import BatchWriter, bytes_needed
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.cleanup import discard_unstored
from ragsift.ingestion.dispatch import Dispatcher, Staging
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.metadata_refresh import (
    MetadataChanges,
    heal_metadata,
    refresh_metadata,
)
from ragsift.ingestion.outcomes import IngestOutcome
from ragsift.ingestion.preparation import PreparationPool, Prepared, WorkerLimits, picklable
from ragsift.ingestion.profile import IngestProfile
from ragsift.ingestion.recovery import Recovery
from ragsift.ingestion.registration import NewFile, Registrar
from ragsift.ingestion.revisions import Replacer
from ragsift.ingestion.states import DocumentStates, object_key
from ragsift.ports import Embedder, ObjectStore, Repository, SearchIndex
from ragsift.processes import this_process
from ragsift.storage_full import StorageSpace, log_failure
from ragsift.versions.writer import DraftWriter

__all__ = ["IngestOutcome", "IngestionService", "NewFile"]

logger = logging.getLogger(__name__)


def _process_settings(_kb_id: str) -> IngestProfile | None:
    return None


class IngestionService:
    """Ingests files into a knowledge base and deletes documents from facts and indexes."""

    def __init__(
        self,
        repository: Repository,
        index: SearchIndex,
        embedder: Embedder,
        object_store: ObjectStore,
        chunker: Chunker,
        max_file_bytes: int,
        batch_size: int = 16,
        versions: DraftWriter | None = None,
        workers: int = 1,
        isolate: bool = False,
        limits: WorkerLimits | None = None,
        batch_documents: int | None = None,
        data_dir: Path | None = None,
        embed_concurrency: int = 1,
        profile: Callable[[str], IngestProfile | None] | None = None,
    ) -> None:
        """`batch_size`: texts per embedder call; `batch_documents` (default: batch_size):
        documents registered, claimed and staged together; `data_dir`: where the local stores
        write, named (with its free space) when the disk is full; `embed_concurrency`: the
        embedder calls sent at once (staged groups hold that many batches at least); `profile`:
        a KB's own chunking and parsing settings by kb id (ragsift/kb_settings.py)."""
        batch_documents = batch_size if batch_documents is None else batch_documents
        if min(max_file_bytes, batch_size, workers, batch_documents, embed_concurrency) < 1:
            raise ValueError("max_file_bytes, batch_size, batch_documents, workers and "
                             "embed_concurrency must be positive")
        self._repository = repository
        self._index = index
        self._embedder = embedder
        self._objects = object_store
        self._chunker = chunker
        self.max_file_bytes = max_file_bytes
        # documents registered, claimed and staged together (their chunks embedded
        # batch_size texts a call): the per-batch statements are paid once for all of them
        self.batch_documents = batch_documents
        # KB versions: chunks go into the KB's draft by reference (see versions/writer.py);
        # None writes them directly (no versions).
        self._versions = versions
        # Documents are prepared in `workers` processes (`isolate`: even a single one, for
        # the time and memory limits); they need a copy of the chunker, so one that does
        # not pickle (its tokenizer) keeps preparation here.
        usable = picklable(chunker)
        self._workers = workers if workers > 1 and usable else 1
        self._isolate = (isolate or workers > 1) and usable
        if (isolate or workers > 1) and not usable:
            logger.warning("the chunker does not pickle; documents are prepared in-process")
        self._limits = limits or WorkerLimits()
        self._pool: PreparationPool | None = None
        self._pool_lock = threading.Lock()
        self._assets = AssetKeeper(repository, object_store)
        self._states = DocumentStates(repository, index, versions, StorageSpace(data_dir))
        self._recovery = Recovery(repository, index, object_store, self._assets)
        self._dispatch = Dispatcher(
            repository, index, embedder, object_store, versions, self._states, self._assets,
            Staging(chunker, self._limits, batch_size, self._preparer, batch_documents,
                    texts=embed_concurrency * batch_size,
                    profile=profile or _process_settings),
        )
        self._replacer = Replacer(repository, index, object_store, versions,
                                  self._dispatch.prepare, object_key, self._written,
                                  self._states.space)
        self._registrar = Registrar(repository, object_store, max_file_bytes, self._states,
                                    self._replacer, self._recovery, self.delete_document)
        self._writer = BatchWriter(repository, index, versions, self._states.fail_on,
                                   self._states.reload_many, self._written)

    @property
    def storage(self) -> StorageSpace:
        """The data directory, for the message of a full disk."""
        return self._states.space

    def close(self) -> None:
        """Stop the preparation workers (started again on next use)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _preparer(self) -> PreparationPool | None:
        """The worker pool, started on first use; None when preparing in-process."""
        if not self._isolate:
            return None
        with self._pool_lock:
            if self._pool is None:
                self._pool = PreparationPool(self._chunker, self._workers, self._limits)
            return self._pool

    def recover(self, kb_id: str | None = None) -> list[str]:
        """Take over the unfinished documents whose process died; ids to process again.

        See ingestion/recovery.py; the returned documents are PENDING and ours. Then the
        metadata changed in the facts alone is written into the index (`kb_id`'s, or every
        KB's): a PATCH killed between its writes, `docs meta` (metadata_refresh.py).
        """
        resumed = self._recovery.recover(kb_id)
        kb_ids = [kb_id] if kb_id is not None else [kb.id for kb in self._repository.list_kbs()]
        heal_metadata(self._repository, self._index, kb_ids)
        return resumed

    def ensure_kb(self, name: str) -> KnowledgeBase:
        """The knowledge base called `name`, created with the current embedder if missing."""
        if not name.strip():
            raise InvalidInput("knowledge base name must not be empty")
        kb = self._repository.get_kb_by_name(name)
        if kb is None:
            kb = self._repository.create_kb(
                KnowledgeBase(
                    id=uuid.uuid4().hex,
                    name=name,
                    embedding_model=self._embedder.model_id,
                    embedding_dim=self._embedder.dimension,
                    created_at=datetime.now(UTC),
                )
            )
        elif kb.embedding_model != self._embedder.model_id:
            raise InvalidInput(
                f"knowledge base {name!r} was built with {kb.embedding_model}; the configured "
                f"embedder is {self._embedder.model_id} (changing the model needs a rebuild)"
            )
        return kb

    def ingest_path(
        self, kb: KnowledgeBase, path: Path, scope: DocumentScope | None = None,
        progress: Progress | None = None,
    ) -> IngestOutcome:
        """Ingest one file; its size is checked before a single byte is read."""
        accepted = self.accept_path(kb, path, scope)
        if accepted.duplicate or accepted.document.status != DocumentStatus.PENDING:
            return accepted
        return self.process(accepted.document.id, progress)

    def accept_path(
        self, kb: KnowledgeBase, path: Path, scope: DocumentScope | None = None,
        key: str | None = None, source_mtime: float | None = None,
    ) -> IngestOutcome:
        """accept() for a file on disk; an oversized file is rejected before it is read."""
        return self._registrar.accept_path(kb, path, scope, key, source_mtime)

    def ingest_bytes(
        self, kb: KnowledgeBase, filename: str, data: bytes, scope: DocumentScope | None = None,
        progress: Progress | None = None,
    ) -> IngestOutcome:
        """Ingest one file's bytes; a duplicate of a live document is reported, not re-added."""
        accepted = self.accept(kb, filename, data, scope)
        if accepted.duplicate or accepted.document.status != DocumentStatus.PENDING:
            return accepted
        return self.process(accepted.document.id, progress)

    def accept(
        self, kb: KnowledgeBase, filename: str, data: bytes, scope: DocumentScope | None = None,
        key: str | None = None, source_mtime: float | None = None, replace: bool = True,
    ) -> IngestOutcome:
        """Store the original and create the document PENDING (FAILED if unusable); no parsing.

        The document's `key` (default: the filename) names it in the KB. The same bytes under
        the same key change nothing (`duplicate`); other bytes under an existing key are
        claimed for a replacement (`replacing`: the caller then runs `replace`), or refused
        as a `conflict` without `replace`. A duplicate of a live document under another key
        (same sha256 and access scope in the KB) is returned as it is. A key held by a
        document of another access scope is a `conflict` (`other_scope`); `scope` None
        (none given) keeps the key's document's scope, and new documents get none.
        """
        return self._registrar.accept(kb, filename, data, scope, key, source_mtime, replace)

    def register_new(
        self, kb: KnowledgeBase, files: Sequence[NewFile], scope: DocumentScope | None = None,
    ) -> list[IngestOutcome | None]:
        """The plainly new files registered PENDING together (one transaction), None for
        the others, which the caller gives to accept() (see ingestion/registration.py)."""
        return self._registrar.register_new(kb, files, scope)

    def claim_replace(self, document_id: str) -> None:
        """Take a READY or FAILED document for a replacement, or DocumentBusy (atomic)."""
        document = self._states.reload(document_id)
        if document.status not in (DocumentStatus.READY, DocumentStatus.FAILED):
            raise DocumentBusy(f"document {document_id!r} is {document.status.value}; "
                               "replace it once it is READY or FAILED")
        self._replacer.claim(document)

    def replace(
        self, document_id: str, filename: str, data: bytes, source_mtime: float | None = None,
        progress: Progress | None = None,
    ) -> IngestOutcome:
        """Write `data` as the new content of a document `accept` claimed (`replacing`).

        See ingestion/revisions.py: the old content stays searchable until the new one is
        committed, and stays when the new one fails.
        """
        document = self._states.reload(document_id)
        sha = hashlib.sha256(data).hexdigest()
        outcome = self._replacer.replace(document, filename, data, sha, source_mtime, progress)
        if outcome.document.status == DocumentStatus.PENDING:  # it had FAILED: ingest anew
            return dataclasses.replace(self.process(document_id, progress), replaced=True)
        return outcome

    def process(self, document_id: str, progress: Progress | None = None) -> IngestOutcome:
        """Parse, chunk, embed and index an accepted document from its stored original.

        Ends READY or FAILED with the reason; NotFound if the document is gone (deleted).
        """
        document = self._states.reload(document_id)
        self._repository.set_owner(document_id, this_process().token())
        try:
            data = self._objects.get(object_key(document))
        except Exception as exc:
            return IngestOutcome(self._states.fail_on(document, exc))
        return self._process(document, data, progress)

    def reindex(self, document_id: str, progress: Progress | None = None) -> IngestOutcome:
        """Re-parse a document from its stored original (after a chunking change, say)."""
        document = self._states.reload(document_id)
        data = self._objects.get(object_key(document))  # NotFound before anything changes
        self._repository.set_owner(document_id, this_process().token())
        # A version build keeps what is unchanged; what an interrupted attempt indexed
        # beyond the facts goes first.
        if self._versions is None:
            self._index.delete_document(document_id)
        else:
            discard_unstored(self._repository, self._index, document)
        return self._process(document, data, progress)

    def _process(
        self, document: Document, data: bytes, progress: Progress | None
    ) -> IngestOutcome:
        prepared: Prepared | None = None
        try:
            prepared = self._dispatch.prepare(document, data, progress)
            count = self._index_document(document, prepared, progress)
            if self._versions is None:  # a version commit sets READY with the chunks
                self._repository.set_status(document.id, DocumentStatus.READY)
        except DocumentRejected as exc:
            return IngestOutcome(self._states.fail(document, str(exc)))
        except Exception as exc:  # one document's failure must not stop the batch
            log_failure(logger, exc, "ingesting %s failed", document.filename)
            needed = None if prepared is None else bytes_needed([prepared])
            return IngestOutcome(self._states.fail_on(document, exc, needed))
        return IngestOutcome(self._states.reload(document.id), chunks=count)

    def _index_document(
        self, document: Document, prepared: Prepared, progress: Progress | None
    ) -> int:
        if self._versions is not None:
            count = self._versions.write(
                document, prepared.chunks, prepared.vectors_by_text(), progress
            )
        else:
            self._index.upsert(prepared.records, prepared.vectors)
            self._repository.replace_chunks(document.id, prepared.chunks)
            count = len(prepared.records)
        self._written(prepared)
        return count

    def _written(self, prepared: Prepared) -> None:
        """After a document's chunks are stored: collect the images no chunk names now.

        A first ingest without images has none to collect (and skips the query)."""
        if prepared.has_assets or prepared.document.status != DocumentStatus.PENDING:
            self._assets.collect(prepared.document.id)

    def process_many(
        self, document_ids: Sequence[str], progress: Progress | None = None,
        commit_chunks: int = 4096,
    ) -> list[IngestOutcome]:
        """process() for several accepted documents, writing the index once per batch.

        An index commit per document dominated ingesting many small files; here documents
        are prepared (ingestion/dispatch.py) and their chunks reach the index together (at
        most about `commit_chunks` per write), then they become READY in one transaction.
        A document that fails to parse fails alone; a failed index write fails the
        documents of that batch.
        """
        outcomes: dict[str, IngestOutcome] = {}
        pending: list[Prepared] = []
        held = 0  # chunks in `pending` (a running count: summing each time was quadratic)
        pool = self._preparer()
        prepared = (
            self._dispatch.prepare_pooled(pool, document_ids, progress) if pool is not None
            else (self._dispatch.prepare_stored(self._states.reload(i), progress)
                  for i in document_ids)
        )
        for item in prepared:
            if isinstance(item, IngestOutcome):
                outcomes[item.document.id] = item
                continue
            pending.append(item)
            held += len(item.records)
            if held >= commit_chunks:
                outcomes.update(self._writer.write(pending))
                pending, held = [], 0
        outcomes.update(self._writer.write(pending))
        return [outcomes[document_id] for document_id in document_ids]

    def read_original(self, document: Document) -> bytes:
        """The stored original of a document (as ingested, or last replaced)."""
        return self._objects.get(object_key(document))

    def read_asset(self, asset: Asset) -> bytes:
        """The bytes of an image kept with a document."""
        return self._objects.get(asset_object_key(asset.kb_id, asset.sha256))

    def refresh_metadata(self, changes: MetadataChanges) -> None:
        """Documents' changed metadata into their chunks in the index (metadata_refresh.py).
        A failure is logged and the facts' change stands: filters treat the documents as
        changed until their chunks are written again."""
        try:
            refresh_metadata(self._repository, self._index, changes)
        except Exception:
            logger.exception("writing the new metadata of %d document(s) into the index "
                             "failed", len(changes))

    def delete_document(self, document_id: str) -> None:
        """Remove a document from the indexes, the object store and the facts."""
        document = self._states.reload(document_id)
        if self._versions is not None and not self._versions.retire(document):
            return  # kept for the versions that still hold it, until they are collected
        self._repository.set_status(document_id, DocumentStatus.DELETING, document.error)
        self._repository.set_owner(document_id, this_process().token())
        self._recovery.finish_delete(document)
