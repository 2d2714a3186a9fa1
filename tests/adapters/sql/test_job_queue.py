"""Ingestion jobs leased from SQLite and PostgreSQL: leases, heartbeats, attempts, give-up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sql.job_queue import SqlJobQueue
from ragsift.domain.errors import NotFound
from ragsift.domain.jobs import IngestJob, JobKind, JobStatus
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase

LEASE_S = 30.0


class Clock:
    """A settable UTC clock shared by the queues of one test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(repo: SqlRepository, db_url: str, clock: Clock) -> Iterator[SqlJobQueue]:
    job_queue = SqlJobQueue(db_url, clock=clock)
    yield job_queue
    job_queue.close()


def add_documents(repo: SqlRepository, count: int, status: DocumentStatus) -> list[str]:
    if repo.get_kb("kb") is None:
        repo.create_kb(KnowledgeBase(id="kb", name="kb", embedding_model="m", embedding_dim=3))
    start = len(repo.list_documents("kb"))
    ids = [f"doc{start + i}" for i in range(count)]
    for document_id in ids:
        repo.add_document(Document(
            id=document_id, kb_id="kb", filename=f"{document_id}.txt", media_type="text/plain",
            sha256=document_id, size=1, status=status,
        ))
    return ids


def test_a_queued_job_is_leased_once_and_completed(repo: SqlRepository, queue: SqlJobQueue) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queued = queue.enqueue(doc, JobKind.PROCESS, max_attempts=3)
    assert (queued.status, queued.attempts, queue.active()) == (JobStatus.QUEUED, 0, 1)

    job = queue.claim("w1", LEASE_S)

    assert job is not None and job.id == queued.id
    assert (job.status, job.attempts, job.lease_owner) == (JobStatus.LEASED, 1, "w1")
    assert queue.claim("w2", LEASE_S) is None
    assert queue.complete(job.id, "w1") is True
    assert queue.active() == 0
    done = queue.get(doc)
    assert done is not None and (done.status, done.lease_owner) == (JobStatus.DONE, None)


def test_enqueue_keeps_an_active_job_and_rearms_a_finished_one(
    repo: SqlRepository, queue: SqlJobQueue
) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    first = queue.enqueue(doc, JobKind.PROCESS, max_attempts=3)
    again = queue.enqueue(doc, JobKind.REINDEX, max_attempts=3)
    assert (again.id, again.kind) == (first.id, JobKind.PROCESS)
    job = queue.claim("w1", LEASE_S)
    assert job is not None and queue.complete(job.id, "w1")

    rearmed = queue.enqueue(doc, JobKind.REINDEX, max_attempts=5)

    assert (rearmed.status, rearmed.kind, rearmed.attempts, rearmed.max_attempts) == (
        JobStatus.QUEUED, JobKind.REINDEX, 0, 5
    )
    assert queue.active() == 1


def test_enqueue_for_an_unknown_document_is_not_found(queue: SqlJobQueue) -> None:
    with pytest.raises(NotFound, match="nope"):
        queue.enqueue("nope", JobKind.PROCESS, max_attempts=3)


def test_an_expired_lease_passes_to_another_worker_and_the_first_loses_it(
    repo: SqlRepository, queue: SqlJobQueue, clock: Clock
) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=3)
    first = queue.claim("w1", LEASE_S)
    assert first is not None

    clock.advance(LEASE_S - 1)
    assert queue.claim("w2", LEASE_S) is None
    clock.advance(2)
    second = queue.claim("w2", LEASE_S)

    assert second is not None and second.id == first.id
    assert (second.attempts, second.lease_owner) == (2, "w2")
    assert queue.heartbeat(first.id, "w1", LEASE_S) is False
    assert queue.complete(first.id, "w1") is False
    assert queue.fail(first.id, "w1", "late", retry=True) is None
    assert queue.complete(second.id, "w2") is True


def test_a_heartbeat_keeps_the_lease(
    repo: SqlRepository, queue: SqlJobQueue, clock: Clock
) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=3)
    job = queue.claim("w1", LEASE_S)
    assert job is not None
    for _ in range(5):
        clock.advance(LEASE_S * 0.6)
        assert queue.heartbeat(job.id, "w1", LEASE_S) is True
        assert queue.claim("w2", LEASE_S) is None
    held = queue.get(doc)
    assert held is not None and held.lease_expires_at == clock.now + timedelta(seconds=LEASE_S)


def test_after_max_attempts_of_expired_leases_the_document_is_failed_with_the_reason(
    repo: SqlRepository, queue: SqlJobQueue, clock: Clock
) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=2)
    for worker in ("w1", "w2"):
        assert queue.claim(worker, LEASE_S) is not None
        repo.set_status(doc, DocumentStatus.INDEXING)
        clock.advance(LEASE_S + 1)

    assert queue.claim("w3", LEASE_S) is None

    job = queue.get(doc)
    assert job is not None and (job.status, job.attempts) == (JobStatus.FAILED, 2)
    document = repo.get_document(doc)
    assert document is not None and document.status == DocumentStatus.FAILED
    assert document.error == (
        "ingestion gave up after 2 attempt(s): the worker stopped before finishing "
        "(its lease expired)"
    )
    assert job.last_error == document.error
    assert queue.active() == 0


def test_giving_up_leaves_a_document_that_reached_ready(
    repo: SqlRepository, queue: SqlJobQueue, clock: Clock
) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=1)
    assert queue.claim("w1", LEASE_S) is not None
    repo.set_status(doc, DocumentStatus.READY)  # then the worker died before completing
    clock.advance(LEASE_S + 1)

    assert queue.claim("w2", LEASE_S) is None

    document = repo.get_document(doc)
    assert document is not None and document.status == DocumentStatus.READY


def test_a_failed_run_is_queued_again_until_attempts_run_out(
    repo: SqlRepository, queue: SqlJobQueue
) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=2)
    job = queue.claim("w1", LEASE_S)
    assert job is not None

    retried = queue.fail(job.id, "w1", "OperationalError: connection lost", retry=True)
    assert retried is not None and (retried.status, retried.attempts) == (JobStatus.QUEUED, 1)
    again = queue.claim("w2", LEASE_S)
    assert again is not None and again.attempts == 2
    given_up = queue.fail(again.id, "w2", "OperationalError: still lost", retry=True)

    assert given_up is not None and given_up.status == JobStatus.FAILED
    document = repo.get_document(doc)
    assert document is not None and document.status == DocumentStatus.FAILED
    assert document.error == "OperationalError: still lost"


def test_fail_without_retry_gives_up_at_once(repo: SqlRepository, queue: SqlJobQueue) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=5)
    job = queue.claim("w1", LEASE_S)
    assert job is not None
    failed = queue.fail(job.id, "w1", "original missing", retry=False)
    assert failed is not None and (failed.status, failed.attempts) == (JobStatus.FAILED, 1)
    document = repo.get_document(doc)
    assert document is not None and document.error == "original missing"


def test_deleting_the_document_deletes_its_job(repo: SqlRepository, queue: SqlJobQueue) -> None:
    (doc,) = add_documents(repo, 1, DocumentStatus.PENDING)
    queue.enqueue(doc, JobKind.PROCESS, max_attempts=3)
    repo.delete_document(doc)
    assert queue.get(doc) is None
    assert queue.claim("w1", LEASE_S) is None


def test_jobs_are_claimed_oldest_first(
    repo: SqlRepository, queue: SqlJobQueue, clock: Clock
) -> None:
    docs = add_documents(repo, 3, DocumentStatus.PENDING)
    for doc in reversed(docs):
        queue.enqueue(doc, JobKind.PROCESS, max_attempts=3)
        clock.advance(1)
    claimed = [queue.claim("w", LEASE_S) for _ in docs]
    assert [job.document_id for job in claimed if job] == list(reversed(docs))


def test_concurrent_workers_claim_every_job_exactly_once(
    repo: SqlRepository, db_url: str
) -> None:
    # Real time and one queue (connection pool) per worker, as separate processes would have.
    docs = add_documents(repo, 40, DocumentStatus.PENDING)
    setup = SqlJobQueue(db_url)
    for doc in docs:
        setup.enqueue(doc, JobKind.PROCESS, max_attempts=3)
    setup.close()
    claimed: dict[str, list[str]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def work(worker_id: str) -> None:
        queue = SqlJobQueue(db_url)
        mine: list[str] = []
        try:
            start.wait()
            while (job := queue.claim(worker_id, LEASE_S)) is not None:
                mine.append(job.document_id)
                assert queue.complete(job.id, worker_id)
        except BaseException as exc:
            errors.append(exc)
        finally:
            claimed[worker_id] = mine
            queue.close()

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    every = [doc for mine in claimed.values() for doc in mine]
    assert sorted(every) == sorted(docs)


@pytest.mark.postgresql_only
def test_a_claim_skips_a_job_another_transaction_has_locked(
    repo: SqlRepository, queue: SqlJobQueue, clock: Clock, db_url: str
) -> None:
    first, second = add_documents(repo, 2, DocumentStatus.PENDING)
    queue.enqueue(first, JobKind.PROCESS, max_attempts=3)
    clock.advance(1)
    queue.enqueue(second, JobKind.PROCESS, max_attempts=3)
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as other:
            # another worker mid-claim: it holds the row lock of the oldest job
            other.execute(sa.text(
                "SELECT id FROM ingest_jobs WHERE document_id = :d FOR UPDATE"
            ), {"d": first})
            claimed: list[object] = []
            claimer = threading.Thread(target=lambda: claimed.append(queue.claim("w", LEASE_S)))
            claimer.start()
            claimer.join(timeout=10)
            assert not claimer.is_alive(), "the claim waited for the locked row"
            other.rollback()
    finally:
        engine.dispose()
    (job,) = claimed
    assert isinstance(job, IngestJob) and job.document_id == second
