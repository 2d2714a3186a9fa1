"""The JobQueue port on SQLAlchemy: ingestion jobs that worker processes lease.

Claiming: on PostgreSQL the oldest claimable job is selected `FOR UPDATE SKIP LOCKED`, so
workers claiming at once never wait for each other and never take the same job; on SQLite
one conditional UPDATE takes it (SQLite runs one writer at a time). Every state change is a
single UPDATE conditioned on the expected state (and, for a leased job, on the lease owner),
so a worker whose lease was taken over can no longer touch the job.

Lease times come from the workers' clocks (UTC): keep them in sync (NTP). A lease is renewed
every third of its length, so a few seconds of skew are harmless.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Row, and_, case, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from ragsift.adapters.sql.migrate import upgrade_to_head
from ragsift.adapters.sql.orm import (
    Base,
    DocumentRow,
    IngestJobRow,
    make_engine,
    storable_message,
    to_utc,
)
from ragsift.domain.errors import NotFound
from ragsift.domain.jobs import ACTIVE_JOB_STATUSES, IngestJob, JobKind, JobStatus
from ragsift.domain.models import DocumentStatus

logger = logging.getLogger(__name__)

JOBS = Base.metadata.tables[IngestJobRow.__tablename__]
UNFINISHED_DOCUMENT = (
    DocumentStatus.PENDING.value, DocumentStatus.PARSING.value, DocumentStatus.INDEXING.value,
)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def job_from_row(row: Row[Any] | IngestJobRow) -> IngestJob:
    """The domain value of an ingest_jobs row."""
    expires = row.lease_expires_at
    return IngestJob(
        id=row.id, document_id=row.document_id, kind=JobKind(row.kind),
        status=JobStatus(row.status), attempts=row.attempts, max_attempts=row.max_attempts,
        lease_owner=row.lease_owner, lease_expires_at=None if expires is None else to_utc(expires),
        last_error=row.last_error, created_at=to_utc(row.created_at),
        updated_at=to_utc(row.updated_at),
    )


def _expired(now: datetime) -> ColumnElement[bool]:
    return and_(JOBS.c.status == JobStatus.LEASED.value, JOBS.c.lease_expires_at < now)


def _claimable(now: datetime) -> ColumnElement[bool]:
    return or_(
        JOBS.c.status == JobStatus.QUEUED.value,
        and_(_expired(now), JOBS.c.attempts < JOBS.c.max_attempts),
    )


def _held_by(job_id: str, worker_id: str) -> ColumnElement[bool]:
    return and_(
        JOBS.c.id == job_id, JOBS.c.lease_owner == worker_id,
        JOBS.c.status == JobStatus.LEASED.value,
    )


def give_up_reason(attempts: int, last_error: str | None) -> str:
    """Why a document whose job ran out of attempts is FAILED."""
    reason = (
        f"ingestion gave up after {attempts} attempt(s): the worker stopped before finishing "
        "(its lease expired)"
    )
    return reason if not last_error else f"{reason}; earlier error: {last_error}"


class SqlJobQueue:
    """Ingestion jobs in SQLite or PostgreSQL; safe across threads and processes."""

    def __init__(self, url: str, clock: Callable[[], datetime] = _utcnow) -> None:
        self._engine = make_engine(url)
        upgrade_to_head(url, self._engine)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        self._skip_locked = self._engine.dialect.name == "postgresql"
        self._clock = clock

    def close(self) -> None:
        """Release every pooled connection."""
        self._engine.dispose()

    def enqueue(self, document_id: str, kind: JobKind, max_attempts: int) -> IngestJob:
        """Queue a job for the document; one already queued or leased is returned as is.

        A document has one job row: a finished one (done or failed) is re-armed.
        """
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        now = self._clock()
        fresh = {
            "kind": kind.value, "status": JobStatus.QUEUED.value, "attempts": 0,
            "max_attempts": max_attempts, "lease_owner": None, "lease_expires_at": None,
            "last_error": None, "created_at": now, "updated_at": now,
        }
        try:
            with self._sessions.begin() as session:
                session.execute(JOBS.insert().values(
                    id=uuid.uuid4().hex, document_id=document_id, **fresh
                ))
        except IntegrityError:
            # The document has a job row already (or does not exist: NotFound below).
            with self._sessions.begin() as session:
                session.execute(
                    update(JOBS)
                    .where(JOBS.c.document_id == document_id,
                           JOBS.c.status.notin_([s.value for s in ACTIVE_JOB_STATUSES]))
                    .values(**fresh)
                )
        job = self.get(document_id)
        if job is None:
            raise NotFound(f"document {document_id!r} does not exist")
        logger.debug("queued %s job for document %s", job.kind.value, document_id)
        return job

    def claim(self, worker_id: str, lease_s: float) -> IngestJob | None:
        """Lease the oldest claimable job, or None; exhausted expired jobs are given up first."""
        now = self._clock()
        with self._sessions.begin() as session:
            self._give_up_exhausted(session, now)
            if self._skip_locked:
                job_id = session.scalars(
                    select(JOBS.c.id).where(_claimable(now))
                    .order_by(JOBS.c.created_at, JOBS.c.id).limit(1)
                    .with_for_update(skip_locked=True)
                ).first()
                if job_id is None:
                    return None
                target: ColumnElement[bool] = JOBS.c.id == job_id
            else:
                candidate = JOBS.alias("candidate")
                target = JOBS.c.id == (
                    select(candidate.c.id)
                    .where(or_(
                        candidate.c.status == JobStatus.QUEUED.value,
                        and_(candidate.c.status == JobStatus.LEASED.value,
                             candidate.c.lease_expires_at < now,
                             candidate.c.attempts < candidate.c.max_attempts),
                    ))
                    .order_by(candidate.c.created_at, candidate.c.id).limit(1)
                    .scalar_subquery()
                )
            row = session.execute(
                update(JOBS).where(target, _claimable(now))
                .values(status=JobStatus.LEASED.value, lease_owner=worker_id,
                        lease_expires_at=now + timedelta(seconds=lease_s),
                        attempts=JOBS.c.attempts + 1, updated_at=now)
                .returning(*JOBS.c)
            ).first()
        if row is None:
            return None
        job = job_from_row(row)
        logger.info("%s leased %s job of document %s (attempt %d of %d)", worker_id,
                    job.kind.value, job.document_id, job.attempts, job.max_attempts)
        return job

    def _give_up_exhausted(self, session: Session, now: datetime) -> None:
        """Jobs whose lease expired on their last attempt: job and document FAILED."""
        exhausted = session.execute(
            update(JOBS)
            .where(_expired(now), JOBS.c.attempts >= JOBS.c.max_attempts)
            .values(status=JobStatus.FAILED.value, lease_owner=None, lease_expires_at=None,
                    updated_at=now)
            .returning(JOBS.c.id, JOBS.c.document_id, JOBS.c.attempts, JOBS.c.last_error)
        ).all()
        for job_id, document_id, attempts, last_error in exhausted:
            reason = give_up_reason(attempts, last_error)
            session.execute(update(JOBS).where(JOBS.c.id == job_id).values(last_error=reason))
            self._fail_document(session, document_id, reason, now)
            logger.warning("gave up the job of document %s: %s", document_id, reason)

    @staticmethod
    def _fail_document(session: Session, document_id: str, reason: str, now: datetime) -> None:
        # Only an unfinished document: a READY one (its worker died after finishing) stays.
        session.execute(
            update(DocumentRow)
            .where(DocumentRow.id == document_id, DocumentRow.status.in_(UNFINISHED_DOCUMENT))
            .values(status=DocumentStatus.FAILED.value, error=storable_message(reason),
                    updated_at=now)
        )

    def heartbeat(self, job_id: str, worker_id: str, lease_s: float) -> bool:
        """Extend the lease; False when this worker no longer holds it."""
        now = self._clock()
        with self._sessions.begin() as session:
            result = session.execute(
                update(JOBS).where(_held_by(job_id, worker_id))
                .values(lease_expires_at=now + timedelta(seconds=lease_s), updated_at=now)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def complete(self, job_id: str, worker_id: str) -> bool:
        """Mark the job done; False when this worker no longer held the lease."""
        now = self._clock()
        with self._sessions.begin() as session:
            result = session.execute(
                update(JOBS).where(_held_by(job_id, worker_id))
                .values(status=JobStatus.DONE.value, lease_owner=None, lease_expires_at=None,
                        last_error=None, updated_at=now)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def fail(self, job_id: str, worker_id: str, reason: str, retry: bool) -> IngestJob | None:
        """Queue the job again (`retry` and attempts left) or give up: job and document FAILED.

        None when this worker no longer held the lease.
        """
        now = self._clock()
        reason = storable_message(reason) or "unknown error"
        new_status: Any = JobStatus.FAILED.value
        if retry:
            new_status = case(
                (JOBS.c.attempts < JOBS.c.max_attempts, JobStatus.QUEUED.value),
                else_=JobStatus.FAILED.value,
            )
        with self._sessions.begin() as session:
            row = session.execute(
                update(JOBS).where(_held_by(job_id, worker_id))
                .values(status=new_status, lease_owner=None, lease_expires_at=None,
                        last_error=reason, updated_at=now)
                .returning(*JOBS.c)
            ).first()
            if row is None:
                return None
            job = job_from_row(row)
            if job.status == JobStatus.FAILED:
                self._fail_document(session, job.document_id, reason, now)
        logger.warning("job of document %s failed (attempt %d of %d, %s): %s",
                       job.document_id, job.attempts, job.max_attempts,
                       "queued again" if job.status == JobStatus.QUEUED else "given up", reason)
        return job

    def active(self) -> int:
        """Jobs queued or leased (an expired lease counts until another worker takes it)."""
        with self._sessions.begin() as session:
            return int(session.scalar(
                select(func.count()).select_from(JOBS)
                .where(JOBS.c.status.in_([s.value for s in ACTIVE_JOB_STATUSES]))
            ) or 0)

    def get(self, document_id: str) -> IngestJob | None:
        """The job row of a document, or None."""
        with self._sessions.begin() as session:
            row = session.execute(select(JOBS).where(JOBS.c.document_id == document_id)).first()
            return None if row is None else job_from_row(row)
