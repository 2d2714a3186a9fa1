"""Document preparation: parse, chunk (exact token counts) and BM25 analysis, in worker processes.

Preparation is pure CPU work and most of an ingest's cost once embedding is cached. A pool of
worker processes prepares the next documents while the parent embeds and writes the previous
ones to the index and the facts. Each job carries one document's bytes and returns its
chunks and, when the index allows it, its children's BM25 tokens.

On Linux the workers are forked: they share the loaded tokenizer vocabulary and modules with
the parent. Spawned workers pay ~1.5 s of CPU each (imports, vocabulary) before their first
document, which made a 100-document ingest slower than in-process on 2 cores (measured,
docs/benchmarks.md). Forking a process that runs threads is only safe when the child takes
no lock another thread may hold: the workers run parsing, rjieba, HF `tokenizers` and the
stemmer, none of which the parent's other threads (tantivy's) use; process_many forks them
before it embeds anything. Elsewhere (macOS, Windows) they are spawned.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TypeVar

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.index_records import AnalyzedText, IndexRecord
from ragsift.domain.models import CHILD_LEVEL, Chunk, Document
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers import parse_document
from ragsift.ports import Vectors

logger = logging.getLogger(__name__)

Analyzer = tuple[int, Callable[[str], list[str]]]
"""(analyzer version, picklable analyzer) of the BM25 index a document goes to."""
T = TypeVar("T")
_START_METHOD = "fork" if sys.platform == "linux" else "spawn"
# Jobs in flight per worker: enough to keep workers busy while the parent embeds and writes
# a batch, few enough to bound the documents held in memory.
_JOBS_PER_WORKER = 4


@dataclass(frozen=True, slots=True)
class Prepared:
    """A parsed, chunked and embedded document, not yet in the index or the facts."""

    document: Document
    chunks: list[Chunk]
    records: list[IndexRecord]
    vectors: Vectors
    analyzed: dict[str, AnalyzedText] = field(default_factory=dict)  # by chunk id

    def vectors_by_text(self) -> dict[str, Vectors]:
        """The vectors by chunk text."""
        return {record.text: vector for record, vector in zip(
            self.records, self.vectors, strict=True)}

    def analyzed_by_text(self) -> dict[str, AnalyzedText]:
        """The BM25 tokens analyzed ahead, by chunk text (as the draft writer keys vectors)."""
        return {chunk.text: self.analyzed[chunk.id] for chunk in self.chunks
                if chunk.id in self.analyzed}


@dataclass(frozen=True, slots=True)
class Job:
    """One document to prepare: its stored original and its kb's BM25 analyzer."""

    document: Document
    data: bytes
    analyzer: Analyzer | None


@dataclass(frozen=True, slots=True)
class Chunked:
    """A prepared document: all chunks, and BM25 tokens of its children by chunk id."""

    chunks: list[Chunk]
    analyzed: dict[str, AnalyzedText]


@dataclass(frozen=True, slots=True)
class Failed:
    """Preparation failed: `rejected` for a DocumentRejected (the reason is for the user),
    otherwise an unexpected error whose traceback is in `detail`."""

    reason: str
    rejected: bool
    detail: str = ""


def chunk_document(
    chunker: Chunker, document_id: str, kb_id: str, filename: str, data: bytes
) -> list[Chunk]:
    """Parents and children of one file; DocumentRejected when it has nothing to index."""
    parsed = parse_document(filename, data)
    chunks = chunker.chunk(document_id, kb_id, parsed)
    if not any(chunk.level == CHILD_LEVEL for chunk in chunks):
        raise DocumentRejected("document has no text to index")
    return chunks


def analyze_children(chunks: list[Chunk], analyzer: Analyzer) -> dict[str, AnalyzedText]:
    """BM25 tokens of each child, by chunk id."""
    version, analyze = analyzer
    return {
        chunk.id: AnalyzedText(version, " ".join(analyze(chunk.text)))
        for chunk in chunks if chunk.level == CHILD_LEVEL
    }


_worker_chunker: Chunker | None = None  # set once in each worker process


def _start_worker(chunker: Chunker) -> None:
    global _worker_chunker
    _worker_chunker = chunker


def _prepare_in_worker(
    document_id: str, kb_id: str, filename: str, data: bytes, analyzer: Analyzer | None
) -> Chunked | Failed:
    assert _worker_chunker is not None, "worker started without a chunker"
    try:
        chunks = chunk_document(_worker_chunker, document_id, kb_id, filename, data)
        analyzed = analyze_children(chunks, analyzer) if analyzer is not None else {}
    except DocumentRejected as exc:
        return Failed(str(exc), rejected=True)
    except Exception as exc:  # reported to the parent as data: it fails this document alone
        return Failed(f"{type(exc).__name__}: {exc}", rejected=False,
                      detail=traceback.format_exc())
    return Chunked(chunks, analyzed)


class PreparationPool:
    """`workers` spawned processes that prepare documents with a copy of `chunker`."""

    def __init__(self, chunker: Chunker, workers: int) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self._executor = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context(_START_METHOD),
            initializer=_start_worker, initargs=(chunker,),
        )

    def submit(
        self, document_id: str, kb_id: str, filename: str, data: bytes,
        analyzer: Analyzer | None,
    ) -> Future[Chunked | Failed]:
        """Prepare one document in a worker."""
        return self._executor.submit(
            _prepare_in_worker, document_id, kb_id, filename, data, analyzer
        )

    def close(self) -> None:
        """Stop the workers (jobs not started yet are cancelled)."""
        self._executor.shutdown(wait=True, cancel_futures=True)


def prepare_in_pool(
    chunker: Chunker, workers: int, jobs: Iterable[Job | T]
) -> Iterator[tuple[Job, Chunked | Failed | None] | T]:
    """Each job with its result, in order, prepared in `workers` processes a few jobs ahead.

    Items that are not jobs (a caller's failures) pass through in order. The result is None
    when the pool broke (a worker was killed): the caller prepares that document itself.
    """
    pool = PreparationPool(chunker, workers)
    window: deque[tuple[Job, Future[Chunked | Failed] | None] | T] = deque()
    todo = iter(jobs)
    broken = False
    try:
        while True:
            for item in todo:
                if isinstance(item, Job):
                    job = None if broken else pool.submit(
                        item.document.id, item.document.kb_id, item.document.filename,
                        item.data, item.analyzer)
                    window.append((item, job))
                else:
                    window.append(item)
                if len(window) >= _JOBS_PER_WORKER * workers:
                    break
            if not window:
                return
            head = window.popleft()
            if not isinstance(head, tuple):
                yield head
                continue
            item, future = head
            result: Chunked | Failed | None = None
            try:
                result = None if future is None else future.result()
            except BrokenProcessPool:
                if not broken:
                    logger.warning("an ingestion worker died; preparing in-process from %s on",
                                   item.document.filename)
                broken = True
            yield item, result
    finally:
        pool.close()


def index_records(
    document: Document, children: Sequence[Chunk],
    analyzed: dict[str, AnalyzedText] | None = None,
) -> list[IndexRecord]:
    """The index records of a document's children, with their BM25 tokens when analyzed."""
    analyzed = analyzed or {}
    scope = document.scope
    return [
        IndexRecord(
            chunk_id=chunk.id, document_id=document.id, kb_id=document.kb_id, text=chunk.text,
            source=scope.source, tenant_id=scope.tenant_id, dataset_id=scope.dataset_id,
            visibility=scope.visibility, allowed_roles=scope.allowed_roles,
            valid_from_seq=chunk.valid_from_seq, valid_to_seq=chunk.valid_to_seq,
            analyzed=analyzed.get(chunk.id),
        )
        for chunk in children
    ]


def picklable(value: object) -> bool:
    """Whether `value` can be sent to a worker process."""
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True
