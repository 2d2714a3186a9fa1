"""Preparation dispatch: documents parsed and chunked (in workers or here), then embedded.

One document (process, reindex, a replacement) goes PARSING, is chunked, goes INDEXING and
is embedded alone. Many (process_many) go through the worker pool a batch at a time: a
batch is claimed and moved to PARSING in one statement, chunked documents are moved to
INDEXING together and their children embedded in shared calls; a one-line document used to
pay for an embedder call, two status commits and three queries of its own.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import CHILD_LEVEL, Chunk, Document, DocumentStatus
from ragsift.faults import crash_point
from ragsift.ingestion.assets import AssetKeeper
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.embedding import Progress, embed_batches, embed_in_batches
from ragsift.ingestion.outcomes import IngestOutcome
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
    prepare_in_pool,
)
from ragsift.ingestion.profile import IngestProfile
from ragsift.ingestion.states import DocumentStates, missing, object_key
from ragsift.ports import (
    Embedder,
    ObjectStore,
    Repository,
    SearchIndex,
    SparsePreAnalyzable,
    Vectors,
)
from ragsift.processes import this_process
from ragsift.storage_full import describe, log_failure
from ragsift.versions.writer import DraftWriter

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class Staging:
    """What preparation needs besides the stores: the chunker, the limits, the batch size
    of embedder calls, the documents claimed and staged at once, and the worker pool, if
    any. `texts`: the texts to embed that close a group of staged documents too, if more
    than `documents` (an embedder sending 8 batches at once needs 8 batches' worth)."""

    chunker: Chunker
    limits: WorkerLimits
    batch: int
    pool: Callable[[], PreparationPool | None]
    documents: int
    texts: int = 0
    # a KB's own chunking and parsing settings by kb id (None: the process settings)
    profile: Callable[[str], IngestProfile | None] = lambda _kb_id: None


@dataclasses.dataclass(frozen=True, slots=True)
class _Staged:
    """A chunked document INDEXING, waiting for its children's vectors."""

    document: Document
    chunked: Chunked
    children: list[Chunk]


class Dispatcher:
    """Prepares documents: everything before the index and the facts are written."""

    def __init__(
        self, repository: Repository, index: SearchIndex, embedder: Embedder,
        objects: ObjectStore, versions: DraftWriter | None, states: DocumentStates,
        assets: AssetKeeper, staging: Staging,
    ) -> None:
        self._repository = repository
        self._index = index
        self._embedder = embedder
        self._objects = objects
        self._versions = versions
        self._states = states
        self._assets = assets
        self._staging = staging
        self._batch = staging.batch
        self._documents = staging.documents
        self._texts = max(staging.documents, staging.texts)

    def prepare(
        self, document: Document, data: bytes, progress: Progress | None, mark: bool = True
    ) -> Prepared:
        """Parse, chunk and embed one document; DocumentRejected when it cannot be used.

        `mark`: move the document through PARSING and INDEXING (a replacement does not: its
        old content stays READY and searchable until the new one is committed).
        """
        if mark:
            self._repository.set_status(document.id, DocumentStatus.PARSING)
        pool = self._staging.pool()
        if pool is None:
            chunked = chunk_document(
                self._staging.chunker, document.id, document.kb_id, document.filename, data,
                self._staging.limits.parse, self._staging.profile(document.kb_id),
            )
        else:
            result = pool.result(pool.submit(Job(
                document, data, self.sparse_analyzer(document.kb_id),
                self._staging.profile(document.kb_id))))
            if isinstance(result, Failed):
                raise DocumentRejected(_reason(document, result))
            chunked = result
        children = self._to_embed(document, chunked, mark)
        vectors = embed_in_batches(
            self._embedder, [chunk.text for chunk in children], self._batch, progress
        )
        return self._prepared(document, chunked, children, vectors)

    def prepare_stored(
        self, document: Document, progress: Progress | None
    ) -> Prepared | IngestOutcome:
        """prepare() from the stored original; a failure ends the document FAILED."""
        try:
            return self.prepare(document, self._objects.get(object_key(document)), progress)
        except DocumentRejected as exc:
            return IngestOutcome(self._states.fail(document, str(exc)))
        except Exception as exc:
            log_failure(logger, exc, "ingesting %s failed", document.filename)
            return IngestOutcome(self._states.fail_on(document, exc))

    def prepare_pooled(
        self, pool: PreparationPool, document_ids: Sequence[str], progress: Progress | None
    ) -> Iterator[Prepared | IngestOutcome]:
        """prepare_stored() of each document, parsed and chunked in the worker processes.

        Documents are moved to INDEXING and embedded a group at a time (a group closes at
        max(staging.documents, staging.texts) documents or children to embed); a failure
        fails its document alone.
        """
        group: list[tuple[Document, Chunked]] = []
        waiting = 0
        for item in prepare_in_pool(pool, self._jobs(document_ids)):
            if isinstance(item, IngestOutcome):
                yield item
                continue
            job, result = item
            if isinstance(result, Failed):
                yield IngestOutcome(self._states.fail(job.document, _reason(job.document, result)))
                continue
            crash_point("parsed")
            group.append((job.document, result))
            waiting += sum(1 for chunk in result.chunks if chunk.level == CHILD_LEVEL)
            if waiting >= self._texts or len(group) >= self._texts:
                yield from self._embed_group(self._stage(group), progress)
                group, waiting = [], 0
        yield from self._embed_group(self._stage(group), progress)

    def sparse_analyzer(self, kb_id: str) -> Analyzer | None:
        """The kb's BM25 analyzer, when the index lets workers analyze ahead of the write."""
        if isinstance(self._index, SparsePreAnalyzable):
            return self._index.sparse_analyzer(kb_id)
        return None

    def _jobs(self, document_ids: Sequence[str]) -> Iterator[Job | IngestOutcome]:
        """Each document claimed (ours, PARSING) with its original and its kb's BM25
        analyzer, or its failure; a batch of documents per claim."""
        analyzers: dict[str, Analyzer | None] = {}
        profiles: dict[str, IngestProfile | None] = {}
        me = this_process().token()
        for start in range(0, len(document_ids), self._documents):
            ids = document_ids[start : start + self._documents]
            documents = self._repository.claim_documents(ids, me, DocumentStatus.PARSING)
            missing(ids, documents)
            for document in (documents[i] for i in ids):
                try:
                    data = self._objects.get(object_key(document))
                except Exception as exc:
                    yield IngestOutcome(self._states.fail_on(document, exc))
                    continue
                if document.kb_id not in analyzers:
                    analyzers[document.kb_id] = self.sparse_analyzer(document.kb_id)
                    profiles[document.kb_id] = self._staging.profile(document.kb_id)
                yield Job(document, data, analyzers[document.kb_id], profiles[document.kb_id])

    def _stage(self, group: Sequence[tuple[Document, Chunked]]) -> list[_Staged | IngestOutcome]:
        """The chunked documents INDEXING with their children to embed (one statement each
        for the group; one by one after a failure, so that only the faulty one fails)."""
        if not group:
            return []
        try:
            self._repository.set_statuses([d.id for d, _ in group], DocumentStatus.INDEXING)
            if self._versions is None:
                todo = [_children(chunked.chunks) for _, chunked in group]
            else:  # only chunks no version shares need a vector
                todo = self._versions.to_embed_many([(d, c.chunks) for d, c in group])
        except Exception:
            logger.warning("staging %d documents together failed; one by one", len(group))
            return [self._stage_one(document, chunked) for document, chunked in group]
        return [_Staged(d, c, children) for (d, c), children in zip(group, todo, strict=True)]

    def _stage_one(self, document: Document, chunked: Chunked) -> _Staged | IngestOutcome:
        try:
            self._repository.set_status(document.id, DocumentStatus.INDEXING)
            return _Staged(document, chunked, self._needing_vectors(document, chunked))
        except Exception as exc:
            log_failure(logger, exc, "ingesting %s failed", document.filename)
            return IngestOutcome(self._states.fail_on(document, exc))

    def _to_embed(self, document: Document, chunked: Chunked, mark: bool) -> list[Chunk]:
        """The document INDEXING (before any embedding) and its children that need a vector."""
        crash_point("parsed")
        if mark:
            self._repository.set_status(document.id, DocumentStatus.INDEXING)
        return self._needing_vectors(document, chunked)

    def _needing_vectors(self, document: Document, chunked: Chunked) -> list[Chunk]:
        if self._versions is not None:  # only chunks no version shares need a vector
            return self._versions.to_embed(document, chunked.chunks)
        return _children(chunked.chunks)

    def _embed_group(
        self, group: Sequence[_Staged | IngestOutcome], progress: Progress | None
    ) -> Iterator[Prepared | IngestOutcome]:
        """The staged documents embedded in shared batches (sent concurrently where the
        embedder can); a document with a text in a failed batch is embedded again alone (so
        that only a document the embedder refuses fails), the others keep their vectors."""
        staged = [item for item in group if isinstance(item, _Staged)]
        yield from (item for item in group if isinstance(item, IngestOutcome))
        if not staged:
            return
        texts = [chunk.text for item in staged for chunk in item.children]
        try:
            results = [r for _, r in embed_batches(self._embedder, texts, self._batch, progress)]
        except Exception as exc:  # not a batch's failure (the cache's, say): one by one
            results = [exc]
        failures = [r for r in results if isinstance(r, Exception)]
        if failures:
            logger.warning("embedding %d of %d batches failed (%s); their documents alone",
                           len(failures), len(results), describe(failures[0]))
        vectors = _joined(results, self._batch, len(texts)) if len(failures) < len(results) \
            else None
        start = 0
        for item in staged:
            end = start + len(item.children)
            if vectors is None or bool(np.isnan(vectors[start:end, 0]).any()):
                yield self._embed_one(item, progress)
            else:
                yield self._finish(item, vectors[start:end])
            start = end

    def _embed_one(self, staged: _Staged, progress: Progress | None) -> Prepared | IngestOutcome:
        try:
            vectors = embed_in_batches(self._embedder, [c.text for c in staged.children],
                                       self._batch, progress)
        except Exception as exc:
            log_failure(logger, exc, "ingesting %s failed", staged.document.filename)
            return IngestOutcome(self._states.fail_on(staged.document, exc))
        return self._finish(staged, vectors)

    def _finish(self, staged: _Staged, vectors: Vectors) -> Prepared | IngestOutcome:
        try:
            return self._prepared(staged.document, staged.chunked, staged.children, vectors)
        except Exception as exc:
            log_failure(logger, exc, "ingesting %s failed", staged.document.filename)
            return IngestOutcome(self._states.fail_on(staged.document, exc))

    def _prepared(
        self, document: Document, chunked: Chunked, children: list[Chunk], vectors: Vectors
    ) -> Prepared:
        # the metadata as it is now: an upload's is set just after the file is accepted,
        # and the index's metadata terms should hold it (metadata_terms.py)
        now = self._repository.document_metadata([document.id]).get(document.id)
        indexed = document if now is None else document.model_copy(update={"metadata": now})
        records = index_records(indexed, children, chunked.analyzed)
        if chunked.assets or chunked.warnings or document.warnings:
            self._assets.stage(document, chunked.assets, chunked.warnings)
        return Prepared(document, chunked.chunks, records, vectors, chunked.analyzed,
                        has_assets=bool(chunked.assets))


def _joined(results: Sequence[Vectors | Exception], batch: int, count: int) -> Vectors:
    """The batches' rows in one array, NaN where a batch failed (one succeeded at least)."""
    dimension = next(r.shape[1] for r in results if not isinstance(r, Exception))
    joined = np.full((count, dimension), np.nan, dtype=np.float32)
    for i, result in enumerate(results):
        if not isinstance(result, Exception):
            joined[i * batch : i * batch + len(result)] = result
    return joined


def _children(chunks: Sequence[Chunk]) -> list[Chunk]:
    return [chunk for chunk in chunks if chunk.level == CHILD_LEVEL]


def _reason(document: Document, failed: Failed) -> str:
    """The reason a worker's failure gives the user (an unexpected one is logged in full)."""
    if not failed.rejected:
        logger.error("ingesting %s failed: %s", document.filename, failed.detail)
    return failed.reason
