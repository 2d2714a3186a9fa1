"""Document preparation: parse, chunk (exact token counts) and BM25 analysis, in worker processes.

Preparation is pure CPU work and most of an ingest's cost once embedding is cached. A pool of
worker processes prepares the next documents while the parent embeds and writes the previous
ones to the index and the facts. A job carries one document's bytes (or a few small
documents', see GROUP_DOCUMENTS) and returns its chunks and, when the index allows it, its
children's BM25 tokens.

On Linux the workers are forked: they share the loaded tokenizer vocabulary and modules with
the parent. Spawned workers pay ~1.5 s of CPU each (imports, vocabulary) before their first
document, which made a 100-document ingest slower than in-process on 2 cores (measured,
docs/benchmarks.md). Forking a process that runs threads is only safe when the child takes
no lock another thread may hold: the workers run parsing, rjieba, HF `tokenizers` and the
stemmer, none of which the parent's other threads (tantivy's) use. Elsewhere (macOS,
Windows) they are spawned.

The workers are also the fence around hostile files: each job has a time limit, each worker
an address-space cap over what it inherited, and a worker that dies or overruns fails its
own document only (nothing is parsed again in the parent). Workers ask the kernel to kill
them when their parent dies, so a killed `ragsift` leaves no orphan holding its files.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import resource
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pebble

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.index_records import AnalyzedText, IndexRecord
from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_terms import document_tokens
from ragsift.domain.models import CHILD_LEVEL, Chunk, Document
from ragsift.ingestion.assets import StagedAsset, attach_assets
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers import parse_document
from ragsift.ingestion.parsers.limits import ParseLimits
from ragsift.ingestion.profile import IngestProfile
from ragsift.ports import Vectors
from ragsift.processes import die_with_parent
from ragsift.storage_full import describe

logger = logging.getLogger(__name__)

Analyzer = tuple[int, Callable[[str], list[str]]]
"""(analyzer version, picklable analyzer) of the BM25 index a document goes to."""
T = TypeVar("T")
_JobArgs = tuple[str, str, str, bytes, Analyzer | None, IngestProfile | None]
"""What a worker gets of a job: document id, kb id, filename, bytes, analyzer, KB profile."""
_START_METHOD = "fork" if sys.platform == "linux" else "spawn"
# Jobs in flight per worker: enough to keep workers busy while the parent embeds and writes
# a batch, few enough to bound the documents held in memory.
_JOBS_PER_WORKER = 4
# Small documents travel to a worker several to a job: a pool job costs ~0.1 ms of CPU in
# pebble's threads and the worker loop besides its pickles (docs/benchmarks.md, 2026-12-04),
# as much as preparing a one-line document. A group that fails as a whole (a time-out, a
# worker that died) is prepared again one job per document, so only the faulty one fails.
GROUP_DOCUMENTS = 8
GROUP_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Prepared:
    """A parsed, chunked and embedded document, not yet in the index or the facts."""

    document: Document
    chunks: list[Chunk]
    records: list[IndexRecord]
    vectors: Vectors
    analyzed: dict[str, AnalyzedText] = field(default_factory=dict)  # by chunk id
    has_assets: bool = False  # images were stored with it (collect the old ones after)

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
    """One document to prepare: its stored original, its kb's BM25 analyzer and its kb's
    own chunking and parsing settings (None: the process settings)."""

    document: Document
    data: bytes
    analyzer: Analyzer | None
    profile: IngestProfile | None = None


@dataclass(frozen=True, slots=True)
class Chunked:
    """A prepared document: all chunks, BM25 tokens of its children by chunk id, its images
    (assets) and what parsing warned of."""

    chunks: list[Chunk]
    analyzed: dict[str, AnalyzedText]
    assets: list[StagedAsset] = field(default_factory=list)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Failed:
    """Preparation failed: `rejected` for a DocumentRejected (the reason is for the user),
    otherwise an unexpected error whose traceback is in `detail`."""

    reason: str
    rejected: bool
    detail: str = ""


def chunk_document(
    chunker: Chunker, document_id: str, kb_id: str, filename: str, data: bytes,
    limits: ParseLimits | None = None, profile: IngestProfile | None = None,
) -> Chunked:
    """Parents, children and images of one file; DocumentRejected when it has no text.

    `profile`: the KB's own chunk sizes, OCR and asset settings over `chunker` and `limits`.
    """
    if profile is not None:
        try:
            chunker = profile.chunker(chunker)
        except ValueError as exc:  # sizes that no longer fit the process settings' others
            raise DocumentRejected(f"the knowledge base's chunk settings: {exc}") from exc
        limits = profile.limits(limits)
    parsed = parse_document(filename, data, limits)
    chunked = chunker.chunk_document(document_id, kb_id, parsed)
    if not any(chunk.level == CHILD_LEVEL for chunk in chunked.chunks):
        raise DocumentRejected("document has no text to index")
    chunks, assets = attach_assets(kb_id, document_id, filename, parsed, chunked)
    return Chunked(chunks, {}, assets, parsed.warnings)


def analyze_children(chunks: list[Chunk], analyzer: Analyzer) -> dict[str, AnalyzedText]:
    """BM25 tokens of each child, by chunk id."""
    version, analyze = analyzer
    return {
        chunk.id: AnalyzedText(version, " ".join(analyze(chunk.text)))
        for chunk in chunks if chunk.level == CHILD_LEVEL
    }


@dataclass(frozen=True, slots=True)
class WorkerLimits:
    """What one document's preparation may take in a worker process."""

    timeout_s: float = 300.0
    # address space the worker may add to what it inherited (RLIMIT_AS over its start size)
    memory_bytes: int = 2 * 1024**3
    # what the parsers themselves check (container sizes, XML depth, characters, ...)
    parse: ParseLimits = field(default_factory=ParseLimits)

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.memory_bytes <= 0:
            raise ValueError("timeout_s and memory_bytes must be positive")


_worker_chunker: Chunker | None = None  # set once in each worker process
_worker_parse_limits: ParseLimits | None = None


def _cap_memory(extra_bytes: int) -> None:
    """Limit the address space to its size now plus `extra_bytes` (a fork inherits a lot)."""
    try:
        pages = int(Path("/proc/self/statm").read_text("ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return
    limit = pages * os.sysconf("SC_PAGE_SIZE") + extra_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _start_worker(chunker: Chunker, limits: WorkerLimits, parent_pid: int) -> None:
    global _worker_chunker, _worker_parse_limits
    die_with_parent(parent_pid)
    _cap_memory(limits.memory_bytes)
    _worker_chunker = chunker
    _worker_parse_limits = limits.parse


def _prepare_in_worker(
    document_id: str, kb_id: str, filename: str, data: bytes, analyzer: Analyzer | None,
    profile: IngestProfile | None = None,
) -> Chunked | Failed:
    assert _worker_chunker is not None, "worker started without a chunker"
    try:
        chunked = chunk_document(_worker_chunker, document_id, kb_id, filename, data,
                                 _worker_parse_limits, profile)
        analyzed = (analyze_children(chunked.chunks, analyzer) if analyzer is not None
                    else {})
    except DocumentRejected as exc:
        return Failed(str(exc), rejected=True)
    except MemoryError:
        return Failed("parsing needed more memory than RAGSIFT_PREPARE_MEMORY_MB allows",
                      rejected=True)
    except Exception as exc:  # reported to the parent as data: it fails this document alone
        return Failed(describe(exc), rejected=False,
                      detail=traceback.format_exc())
    return Chunked(chunked.chunks, analyzed, chunked.assets, chunked.warnings)


def _prepare_group_in_worker(items: list[_JobArgs]) -> list[Chunked | Failed]:
    return [_prepare_in_worker(*item) for item in items]


def _job_args(job: Job) -> _JobArgs:
    document = job.document
    return (document.id, document.kb_id, document.filename, job.data, job.analyzer,
            job.profile)


class PreparationPool:
    """Worker processes that prepare documents with a copy of `chunker`, within `limits`.

    pebble's pool knows which job a worker ran: a worker that dies (out of memory, a crash
    in a native parser) or overruns the time limit fails that job alone and is replaced,
    and the other jobs go on.
    """

    def __init__(self, chunker: Chunker, workers: int, limits: WorkerLimits) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self._limits = limits
        if _START_METHOD == "fork":
            # Load the tokenizer's vocabulary here, before the workers fork, so that they
            # share it: otherwise each loaded its own (~0.6 s CPU a worker, measured: more
            # than 300 one-line documents cost to prepare).
            chunker.count("warm")
        self._pool = pebble.ProcessPool(
            max_workers=workers, initializer=_start_worker,
            initargs=(chunker, limits, os.getpid()),
            context=multiprocessing.get_context(_START_METHOD),
        )

    def submit(self, job: Job) -> Future[Chunked | Failed]:
        """Prepare one document in a worker."""
        future: Future[Chunked | Failed] = self._pool.schedule(
            _prepare_in_worker, args=_job_args(job), timeout=self._limits.timeout_s)
        return future

    def submit_group(self, jobs: Sequence[Job]) -> Future[list[Chunked | Failed]]:
        """Prepare several small documents in one worker job (within one time limit)."""
        future: Future[list[Chunked | Failed]] = self._pool.schedule(
            _prepare_group_in_worker, args=([_job_args(job) for job in jobs],),
            timeout=self._limits.timeout_s)
        return future

    def group_results(
        self, jobs: Sequence[Job], future: Future[list[Chunked | Failed]]
    ) -> list[Chunked | Failed]:
        """The results of a submit_group(); when the group failed as a whole, each job again
        on its own, so that the document at fault fails alone with the reason."""
        try:
            return future.result()
        except (FutureTimeout, pebble.ProcessExpired):
            logger.info("a group of %d documents failed in a worker; one by one", len(jobs))
        retries = [self.submit(job) for job in jobs]
        return [self.result(retry) for retry in retries]

    def result(self, future: Future[Chunked | Failed]) -> Chunked | Failed:
        """The job's result; a worker that died or overran fails the document with why."""
        try:
            return future.result()
        except FutureTimeout:
            return Failed(f"parsing took longer than {self._limits.timeout_s:g} s "
                          "(RAGSIFT_PREPARE_TIMEOUT_S)", rejected=True)
        except pebble.ProcessExpired as exc:
            code = getattr(exc, "exitcode", None)
            return Failed(f"the parser process died on this document (exit code {code}; "
                          "over RAGSIFT_PREPARE_MEMORY_MB, or a crash in a parser)",
                          rejected=True)

    def close(self) -> None:
        """Stop the workers (jobs not started yet are cancelled)."""
        self._pool.stop()  # type: ignore[no-untyped-call]
        self._pool.join()


def prepare_in_pool(
    pool: PreparationPool, jobs: Iterable[Job | T]
) -> Iterator[tuple[Job, Chunked | Failed] | T]:
    """Each job with its result, in order, prepared in the pool a few jobs ahead (small
    documents a group to a job, see GROUP_DOCUMENTS).

    Items that are not jobs (a caller's failures) pass through in order.
    """
    window: deque[tuple[list[Job], Future[list[Chunked | Failed]]] | T] = deque()
    todo = _grouped(jobs)
    try:
        while True:
            for entry in todo:
                window.append((entry, pool.submit_group(entry)) if isinstance(entry, list)
                              else entry)
                if len(window) >= _JOBS_PER_WORKER * pool.workers:
                    break
            if not window:
                return
            head = window.popleft()
            if not isinstance(head, tuple):
                yield head
                continue
            group, future = head
            yield from zip(group, pool.group_results(group, future), strict=True)
    finally:
        for item in window:  # a consumer that stopped early leaves nothing running
            if isinstance(item, tuple):
                item[1].cancel()


def _grouped(jobs: Iterable[Job | T]) -> Iterator[list[Job] | T]:
    """Consecutive small jobs in groups of up to GROUP_DOCUMENTS and GROUP_BYTES; a larger
    job alone; other items in their place."""
    group: list[Job] = []
    size = 0
    for entry in jobs:
        if not isinstance(entry, Job):
            if group:
                yield group
                group, size = [], 0
            yield entry
            continue
        if group and (len(group) >= GROUP_DOCUMENTS or size + len(entry.data) > GROUP_BYTES):
            yield group
            group, size = [], 0
        group.append(entry)
        size += len(entry.data)
    if group:
        yield group


def index_records(
    document: Document, children: Sequence[Chunk],
    analyzed: dict[str, AnalyzedText] | None = None,
) -> list[IndexRecord]:
    """The index records of a document's children, with their BM25 tokens when analyzed."""
    analyzed = analyzed or {}
    scope = document.scope
    tokens = document_tokens(decode_metadata(document.metadata))
    return [
        IndexRecord(
            chunk_id=chunk.id, document_id=document.id, kb_id=document.kb_id, text=chunk.text,
            source=scope.source, tenant_id=scope.tenant_id, dataset_id=scope.dataset_id,
            visibility=scope.visibility, allowed_roles=scope.allowed_roles,
            valid_from_seq=chunk.valid_from_seq, valid_to_seq=chunk.valid_to_seq,
            analyzed=analyzed.get(chunk.id), metadata_tokens=tokens,
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
