"""IngestionService: PENDING -> PARSING -> INDEXING -> READY | FAILED, one document at a time.

A bad document ends FAILED with its reason and never affects the rest of the knowledge base.
Chunks reach the index before the document is READY, but search re-checks READY in the facts,
so nothing of a document is visible before it is complete.

Every unfinished document names its owner, the process working on it (ragsift/processes.py);
`recover` (ingestion/recovery.py) takes over those whose owner died.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePath

from ragsift.domain.assets import Asset, asset_object_key
from ragsift.domain.errors import DocumentBusy, DocumentRejected, InvalidInput
from ragsift.domain.keys import normalize_key
from ragsift.domain.models import (
    CHILD_LEVEL,
    Chunk,
    Document,
    DocumentScope,
    DocumentStatus,
    KnowledgeBase,
)
from ragsift.faults import crash_point
from ragsift.ingestion.assets import AssetKeeper
from ragsift.ingestion.batch_write import BatchWriter
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.cleanup import discard_unstored
from ragsift.ingestion.embedding import Progress, embed_in_batches
from ragsift.ingestion.outcomes import UNFINISHED, IngestOutcome
from ragsift.ingestion.parsers import media_type_for
from ragsift.ingestion.preparation import (
    Analyzer,
    Chunked,
    Failed,
    Job,
    PreparationPool,
    Prepared,
    WorkerLimits,
    chunk_document,
    index_records,
    picklable,
    prepare_in_pool,
)
from ragsift.ingestion.recovery import Recovery, load_document
from ragsift.ingestion.revisions import Replacer
from ragsift.ports import (
    Embedder,
    ObjectStore,
    Repository,
    SearchIndex,
    SparsePreAnalyzable,
    Vectors,
)
from ragsift.processes import is_dead, this_process
from ragsift.versions.writer import DraftWriter

__all__ = ["IngestOutcome", "IngestionService"]

logger = logging.getLogger(__name__)


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
    ) -> None:
        if max_file_bytes < 1 or batch_size < 1 or workers < 1:
            raise ValueError("max_file_bytes, batch_size and workers must be positive")
        self._repository = repository
        self._index = index
        self._embedder = embedder
        self._objects = object_store
        self._chunker = chunker
        self._max_bytes = max_file_bytes
        self._batch = batch_size
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
        self._recovery = Recovery(repository, index, object_store, self._assets)
        self._replacer = Replacer(repository, index, object_store, versions, self._prepare,
                                  _object_key, self._written)
        self._writer = BatchWriter(repository, index, versions, self._fail_existing,
                                   self._reload, self._written)

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

        See ingestion/recovery.py; the returned documents are PENDING and ours.
        """
        return self._recovery.recover(kb_id)

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
        size = path.stat().st_size
        if size > self._max_bytes:
            reason = f"file is {size} bytes, over the limit of {self._max_bytes} bytes"
            return IngestOutcome(self._failed(kb, path.name, None, size, reason, scope,
                                              normalize_key(key or path.name)))
        return self.accept(kb, path.name, path.read_bytes(), scope, key=key,
                           source_mtime=source_mtime)

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
        (same sha256 in the KB) is returned as it is.
        """
        key = normalize_key(key or filename)
        if len(data) > self._max_bytes:
            reason = f"file is {len(data)} bytes, over the limit of {self._max_bytes} bytes"
            return IngestOutcome(self._failed(kb, filename, None, len(data), reason, scope, key))
        sha = hashlib.sha256(data).hexdigest()
        keyed = self._repository.find_document_by_key(kb.id, key)
        if keyed is not None and keyed.sha256 != sha and keyed.status not in UNFINISHED:
            if not replace:
                return IngestOutcome(keyed, conflict=True)
            self._replacer.claim(keyed)
            return IngestOutcome(keyed, replacing=True)
        if keyed is not None and keyed.sha256 != sha:  # still being ingested
            if not is_dead(self._repository.document_owner(keyed.id)):
                raise DocumentBusy(f"document {keyed.id!r} ({keyed.key}) is being ingested; "
                                   "replace it once it is READY or FAILED")
            self.delete_document(keyed.id)  # abandoned, never searchable: start over
            keyed = None
        existing = keyed or self._repository.find_document_by_sha256(kb.id, sha)
        if existing is not None and existing.status in UNFINISHED:
            return self._recovery.resume_or_busy(existing)
        if existing is not None and existing.status != DocumentStatus.FAILED:
            return IngestOutcome(existing, duplicate=True)
        if existing is not None:
            self.delete_document(existing.id)  # a failed attempt is retried from scratch
        try:
            media_type = media_type_for(filename)
        except DocumentRejected as exc:
            return IngestOutcome(self._failed(kb, filename, sha, len(data), str(exc), scope, key))
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
            self._objects.put(_object_key(document), data)
        except Exception as exc:
            logger.exception("storing the original of %s failed", filename)
            return IngestOutcome(self._fail_existing(document, f"{type(exc).__name__}: {exc}"))
        return IngestOutcome(document)

    def claim_replace(self, document_id: str) -> None:
        """Take a READY or FAILED document for a replacement, or DocumentBusy (atomic)."""
        document = self._reload(document_id)
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
        document = self._reload(document_id)
        sha = hashlib.sha256(data).hexdigest()
        outcome = self._replacer.replace(document, filename, data, sha, source_mtime, progress)
        if outcome.document.status == DocumentStatus.PENDING:  # it had FAILED: ingest anew
            return dataclasses.replace(self.process(document_id, progress), replaced=True)
        return outcome

    def process(self, document_id: str, progress: Progress | None = None) -> IngestOutcome:
        """Parse, chunk, embed and index an accepted document from its stored original.

        Ends READY or FAILED with the reason; NotFound if the document is gone (deleted).
        """
        document = self._reload(document_id)
        self._repository.set_owner(document_id, this_process().token())
        try:
            data = self._objects.get(_object_key(document))
        except Exception as exc:
            return IngestOutcome(self._fail_existing(document, f"{type(exc).__name__}: {exc}"))
        return self._process(document, data, progress)

    def reindex(self, document_id: str, progress: Progress | None = None) -> IngestOutcome:
        """Re-parse a document from its stored original (after a chunking change, say)."""
        document = self._reload(document_id)
        data = self._objects.get(_object_key(document))  # NotFound before anything changes
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
        try:
            count = self._index_document(document, data, progress)
            if self._versions is None:  # a version commit sets READY with the chunks
                self._repository.set_status(document.id, DocumentStatus.READY)
        except DocumentRejected as exc:
            return IngestOutcome(self._fail_existing(document, str(exc)))
        except Exception as exc:  # one document's failure must not stop the batch
            logger.exception("ingesting %s failed", document.filename)
            return IngestOutcome(self._fail_existing(document, f"{type(exc).__name__}: {exc}"))
        return IngestOutcome(self._reload(document.id), chunks=count)

    def read_original(self, document: Document) -> bytes:
        """The stored original of a document (as ingested, or last replaced)."""
        return self._objects.get(_object_key(document))

    def read_asset(self, asset: Asset) -> bytes:
        """The bytes of an image kept with a document."""
        return self._objects.get(asset_object_key(asset.kb_id, asset.sha256))

    def delete_document(self, document_id: str) -> None:
        """Remove a document from the indexes, the object store and the facts."""
        document = self._reload(document_id)
        if self._versions is not None and not self._versions.retire(document):
            return  # kept for the versions that still hold it, until they are collected
        self._repository.set_status(document_id, DocumentStatus.DELETING, document.error)
        self._repository.set_owner(document_id, this_process().token())
        self._recovery.finish_delete(document)

    def _index_document(
        self, document: Document, data: bytes, progress: Progress | None
    ) -> int:
        prepared = self._prepare(document, data, progress)
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

    def _prepare(
        self, document: Document, data: bytes, progress: Progress | None, mark: bool = True
    ) -> Prepared:
        """Parse, chunk and embed: everything before the index and the facts are written.

        `mark`: move the document through PARSING and INDEXING (a replacement does not: its
        old content stays READY and searchable until the new one is committed).
        """
        if mark:
            self._repository.set_status(document.id, DocumentStatus.PARSING)
        pool = self._preparer()
        if pool is None:
            chunked = chunk_document(
                self._chunker, document.id, document.kb_id, document.filename, data,
                self._limits.parse,
            )
            return self._embed(document, chunked, progress, mark)
        job = Job(document, data, self._sparse_analyzer(document.kb_id))
        result = pool.result(pool.submit(job))
        if isinstance(result, Failed):
            if not result.rejected:
                logger.error("ingesting %s failed: %s", document.filename, result.detail)
            raise DocumentRejected(result.reason)
        return self._embed(document, result, progress, mark)

    def _embed(
        self, document: Document, chunked: Chunked, progress: Progress | None,
        mark: bool = True,
    ) -> Prepared:
        """Embed the children of a chunked document that need a vector."""
        children = self._to_embed(document, chunked, mark)
        vectors = embed_in_batches(
            self._embedder, [chunk.text for chunk in children], self._batch, progress
        )
        return self._prepared(document, chunked, children, vectors)

    def _to_embed(self, document: Document, chunked: Chunked, mark: bool = True) -> list[Chunk]:
        """The document INDEXING (before any embedding) and its children that need a vector."""
        crash_point("parsed")
        if mark:
            self._repository.set_status(document.id, DocumentStatus.INDEXING)
        if self._versions is not None:  # only chunks no version shares need a vector
            return self._versions.to_embed(document, chunked.chunks)
        return [chunk for chunk in chunked.chunks if chunk.level == CHILD_LEVEL]

    def _prepared(
        self, document: Document, chunked: Chunked, children: list[Chunk], vectors: Vectors
    ) -> Prepared:
        records = index_records(document, children, chunked.analyzed)
        if chunked.assets or chunked.warnings or document.warnings:
            self._assets.stage(document, chunked.assets, chunked.warnings)
        return Prepared(document, chunked.chunks, records, vectors, chunked.analyzed,
                        has_assets=bool(chunked.assets))

    def process_many(
        self, document_ids: Sequence[str], progress: Progress | None = None,
        commit_chunks: int = 4096,
    ) -> list[IngestOutcome]:
        """process() for several accepted documents, writing the index once per batch.

        An index commit per document dominated ingesting many small files; here documents
        are prepared one by one and their chunks reach the index together (at most about
        `commit_chunks` per write), then each becomes READY. A document that fails to parse
        fails alone; a failed index write fails the documents of that batch.
        """
        outcomes: dict[str, IngestOutcome] = {}
        pending: list[Prepared] = []
        pool = self._preparer()
        prepared = (
            self._prepare_parallel(pool, document_ids, progress) if pool is not None
            else (self._prepare_stored(self._reload(i), progress) for i in document_ids)
        )
        for item in prepared:
            if isinstance(item, IngestOutcome):
                outcomes[item.document.id] = item
            else:
                pending.append(item)
            if sum(len(p.records) for p in pending) >= commit_chunks:
                outcomes.update(self._writer.write(pending))
                pending = []
        outcomes.update(self._writer.write(pending))
        return [outcomes[document_id] for document_id in document_ids]

    def _prepare_stored(
        self, document: Document, progress: Progress | None, data: bytes | None = None
    ) -> Prepared | IngestOutcome:
        """_prepare() from the stored original; a failure ends the document FAILED."""
        try:
            if data is None:
                data = self._objects.get(_object_key(document))
            return self._prepare(document, data, progress)
        except DocumentRejected as exc:
            return IngestOutcome(self._fail_existing(document, str(exc)))
        except Exception as exc:
            logger.exception("ingesting %s failed", document.filename)
            return IngestOutcome(self._fail_existing(document, f"{type(exc).__name__}: {exc}"))

    def _prepare_parallel(
        self, pool: PreparationPool, document_ids: Sequence[str], progress: Progress | None
    ) -> Iterator[Prepared | IngestOutcome]:
        """_prepare_stored() for each document, the parsing and chunking in worker processes.

        Small documents are embedded together, a batch of children across documents per
        call: one embedder call per one-line document cost more than its embedding.
        """
        group: list[_Staged] = []
        for item in prepare_in_pool(pool, self._jobs(document_ids)):
            if isinstance(item, IngestOutcome):
                yield item
                continue
            job, result = item
            staged = self._stage(job.document, result)
            if isinstance(staged, IngestOutcome):
                yield staged
                continue
            group.append(staged)
            if sum(len(s.children) for s in group) >= self._batch:
                yield from self._embed_group(group, progress)
                group = []
        yield from self._embed_group(group, progress)

    def _stage(self, document: Document, result: Chunked | Failed) -> _Staged | IngestOutcome:
        """A worker's result INDEXING with its children to embed, or the document FAILED."""
        if isinstance(result, Failed):
            if not result.rejected:
                logger.error("ingesting %s failed: %s", document.filename, result.detail)
            return IngestOutcome(self._fail_existing(document, result.reason))
        try:
            return _Staged(document, result, self._to_embed(document, result))
        except Exception as exc:
            logger.exception("ingesting %s failed", document.filename)
            return IngestOutcome(self._fail_existing(document, f"{type(exc).__name__}: {exc}"))

    def _embed_group(
        self, group: Sequence[_Staged], progress: Progress | None
    ) -> Iterator[Prepared | IngestOutcome]:
        """The staged documents embedded in shared batches; after a failure, one by one
        (so that a document the embedder refuses fails alone)."""
        if not group:
            return
        texts = [chunk.text for staged in group for chunk in staged.children]
        try:
            vectors = embed_in_batches(self._embedder, texts, self._batch, progress)
        except Exception:
            logger.warning("embedding %d documents together failed; one by one", len(group))
            for staged in group:
                yield self._embed_one(staged, progress)
            return
        start = 0
        for staged in group:
            end = start + len(staged.children)
            yield self._finish(staged, vectors[start:end])
            start = end

    def _embed_one(self, staged: _Staged, progress: Progress | None) -> Prepared | IngestOutcome:
        try:
            vectors = embed_in_batches(self._embedder, [c.text for c in staged.children],
                                       self._batch, progress)
        except Exception as exc:
            logger.exception("ingesting %s failed", staged.document.filename)
            reason = f"{type(exc).__name__}: {exc}"
            return IngestOutcome(self._fail_existing(staged.document, reason))
        return self._finish(staged, vectors)

    def _finish(self, staged: _Staged, vectors: Vectors) -> Prepared | IngestOutcome:
        try:
            return self._prepared(staged.document, staged.chunked, staged.children, vectors)
        except Exception as exc:
            logger.exception("ingesting %s failed", staged.document.filename)
            reason = f"{type(exc).__name__}: {exc}"
            return IngestOutcome(self._fail_existing(staged.document, reason))

    def _jobs(self, document_ids: Sequence[str]) -> Iterator[Job | IngestOutcome]:
        """Each document's stored original and its kb's BM25 analyzer, or its failure."""
        analyzers: dict[str, Analyzer | None] = {}
        me = this_process().token()
        for document_id in document_ids:
            document = self._reload(document_id)
            self._repository.set_owner(document_id, me)
            try:
                data = self._objects.get(_object_key(document))
            except Exception as exc:
                yield IngestOutcome(self._fail_existing(document, f"{type(exc).__name__}: {exc}"))
                continue
            self._repository.set_status(document.id, DocumentStatus.PARSING)
            if document.kb_id not in analyzers:
                analyzers[document.kb_id] = self._sparse_analyzer(document.kb_id)
            yield Job(document, data, analyzers[document.kb_id])

    def _sparse_analyzer(self, kb_id: str) -> Analyzer | None:
        """The kb's BM25 analyzer, when the index lets workers analyze ahead of the write."""
        if isinstance(self._index, SparsePreAnalyzable):
            return self._index.sparse_analyzer(kb_id)
        return None

    def _failed(
        self, kb: KnowledgeBase, filename: str, sha: str | None, size: int, reason: str,
        scope: DocumentScope | None, key: str | None = None,
    ) -> Document:
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

    def _fail_existing(self, document: Document, reason: str) -> Document:
        try:
            if self._versions is None:
                self._index.delete_document(document.id)
            else:  # versions keep what they hold; what no version holds goes
                discard_unstored(self._repository, self._index, document)
        except Exception:  # the FAILED status matters more than index cleanup
            logger.exception("could not remove chunks of failed document %s", document.id)
        self._repository.set_status(document.id, DocumentStatus.FAILED, reason)
        return self._reload(document.id)

    def _reload(self, document_id: str) -> Document:
        return load_document(self._repository, document_id)


@dataclasses.dataclass(frozen=True, slots=True)
class _Staged:
    """A chunked document INDEXING, waiting for its children's vectors."""

    document: Document
    chunked: Chunked
    children: list[Chunk]


def _object_key(document: Document) -> str:
    # user-given names never become paths: keep only a tame basename
    safe = re.sub(r"[^\w.\-]", "_", PurePath(document.filename.replace("\\", "/")).name)
    return f"{document.kb_id}/{document.id}/{safe.strip('.') or 'original'}"
