"""JobWorker over the SQL job queue: runs, retries from scratch, renews leases, gives up."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.api_helpers import HOTELS, LEAVE, SMALL_CHUNKS
from ragsift.adapters.sql.job_queue import SqlJobQueue
from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.jobs import JobKind, JobStatus
from ragsift.domain.models import CHILD_LEVEL, DocumentScope, DocumentStatus
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.job_worker import JobWorker
from ragsift.ingestion.pipeline import IngestOutcome


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    built = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    yield built
    built.close()


@pytest.fixture
def queue(container: Container) -> Iterator[SqlJobQueue]:
    job_queue = SqlJobQueue(container.settings.resolved_database_url)
    yield job_queue
    job_queue.close()


def accept(container: Container, name: str, data: bytes) -> str:
    kb = container.ingestion.ensure_kb("docs")
    outcome = container.ingestion.accept(kb, name, data, DocumentScope())
    assert outcome.document.status == DocumentStatus.PENDING
    return outcome.document.id


def children(container: Container, document_id: str) -> list[str]:
    return [c.id for c in container.repository.list_chunks(document_id) if c.level == CHILD_LEVEL]


def search_ids(container: Container, kb_id: str) -> list[str]:
    request = SearchRequest(query="hotel limit per night", kb_id=kb_id, small2big=False)
    return [hit.chunk_id for hit in asyncio.run(container.retrieval.search(request)).hits]


def test_a_worker_runs_every_queued_document_and_stops_when_drained(
    container: Container, queue: SqlJobQueue
) -> None:
    ids = [accept(container, "hotels.md", HOTELS), accept(container, "leave.md", LEAVE)]
    for document_id in ids:
        queue.enqueue(document_id, JobKind.PROCESS, max_attempts=3)
    worker = JobWorker(container.ingestion, queue, lease_s=30, poll_s=0.05)

    assert worker.run(threading.Event(), drain=True) == 2

    for document_id in ids:
        document = container.repository.get_document(document_id)
        assert document is not None and document.status == DocumentStatus.READY
        job = queue.get(document_id)
        assert job is not None and (job.status, job.attempts) == (JobStatus.DONE, 1)
    assert container.index.count() == sum(len(children(container, d)) for d in ids)


def test_a_retry_after_a_dead_worker_removes_what_it_wrote_and_ends_ready_once(
    container: Container, queue: SqlJobQueue
) -> None:
    document_id = accept(container, "hotels.md", HOTELS)
    kb_id = container.repository.list_kbs()[0].id
    queue.enqueue(document_id, JobKind.PROCESS, max_attempts=3)
    assert queue.claim("dead-worker", lease_s=0.2) is not None
    # What a worker killed after its index write leaves: chunks in the index, none in the
    # facts, the document INDEXING; one chunk id no current chunking produces.
    container.repository.set_status(document_id, DocumentStatus.INDEXING)
    stale = IndexRecord("stale-chunk", document_id, kb_id, "hotel limit per night stale copy")
    container.index.upsert([stale], container.embedder.embed_passages([stale.text]))
    time.sleep(0.3)  # the dead worker's lease expires
    assert search_ids(container, kb_id) == []  # indexed, but not READY: never a hit

    worker = JobWorker(container.ingestion, queue, lease_s=30, poll_s=0.05)
    assert worker.run_once() is True

    document = container.repository.get_document(document_id)
    assert document is not None and document.status == DocumentStatus.READY
    chunk_ids = children(container, document_id)
    assert len(chunk_ids) == len(set(chunk_ids)) > 0
    assert container.index.count() == len(chunk_ids)
    assert container.index.sparse_count() == len(chunk_ids)  # type: ignore[attr-defined]
    found = container.index.search_sparse("stale copy", SearchFilter(kb_id=kb_id), 50)
    assert "stale-chunk" not in {hit.chunk_id for hit in found}
    job = queue.get(document_id)
    assert job is not None and (job.status, job.attempts) == (JobStatus.DONE, 2)
    assert search_ids(container, kb_id) and set(search_ids(container, kb_id)) <= set(chunk_ids)


class RaisingIngestion:
    """Stands in for IngestionService: every run raises, as a lost database connection would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def process(self, document_id: str, progress: object = None) -> IngestOutcome:
        self.calls.append(("process", document_id))
        raise ConnectionError("database went away")

    def reindex(self, document_id: str, progress: object = None) -> IngestOutcome:
        self.calls.append(("reindex", document_id))
        raise ConnectionError("database went away")


def test_a_run_that_raises_is_retried_from_scratch_and_then_fails_the_document(
    container: Container, queue: SqlJobQueue
) -> None:
    document_id = accept(container, "hotels.md", HOTELS)
    queue.enqueue(document_id, JobKind.PROCESS, max_attempts=2)
    ingestion = RaisingIngestion()
    worker = JobWorker(ingestion, queue, lease_s=30, poll_s=0.05)  # type: ignore[arg-type]

    assert worker.run(threading.Event(), drain=True) == 2

    assert ingestion.calls == [("process", document_id), ("reindex", document_id)]
    document = container.repository.get_document(document_id)
    assert document is not None and document.status == DocumentStatus.FAILED
    assert document.error == "ConnectionError: database went away"


class SlowIngestion:
    """Stands in for IngestionService: a run that outlasts several lease lengths."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def process(self, document_id: str, progress: object = None) -> IngestOutcome:
        time.sleep(self.seconds)
        raise LookupError("finished sleeping")  # ends the job as a failed attempt


def test_a_working_worker_keeps_its_lease_beyond_its_length(
    container: Container, queue: SqlJobQueue
) -> None:
    document_id = accept(container, "hotels.md", HOTELS)
    queue.enqueue(document_id, JobKind.PROCESS, max_attempts=1)
    worker = JobWorker(SlowIngestion(1.5), queue, lease_s=0.3, poll_s=0.05)  # type: ignore[arg-type]
    running = threading.Thread(target=worker.run_once)
    running.start()
    other = SqlJobQueue(container.settings.resolved_database_url)
    try:
        while (job := queue.get(document_id)) is None or job.status != JobStatus.LEASED:
            time.sleep(0.01)
        # four lease lengths: without renewals the lease would pass to the thief
        stolen = []
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            stolen.append(other.claim("thief", lease_s=5))
            time.sleep(0.05)
    finally:
        running.join()
        other.close()
    assert set(stolen) == {None}
    job = queue.get(document_id)
    assert job is not None and (job.status, job.attempts) == (JobStatus.FAILED, 1)
    assert job.last_error == "LookupError: finished sleeping"


def test_a_reindex_job_without_a_stored_original_fails_the_document_at_once(
    container: Container, queue: SqlJobQueue
) -> None:
    document_id = accept(container, "hotels.md", HOTELS)
    shutil.rmtree(container.settings.data_dir / "objects")
    queue.enqueue(document_id, JobKind.REINDEX, max_attempts=3)
    worker = JobWorker(container.ingestion, queue, lease_s=30, poll_s=0.05)

    assert worker.run(threading.Event(), drain=True) == 1

    document = container.repository.get_document(document_id)
    assert document is not None and document.status == DocumentStatus.FAILED
    assert document.error is not None and document.error.startswith("no stored object")
    job = queue.get(document_id)
    assert job is not None and (job.status, job.attempts) == (JobStatus.FAILED, 1)
