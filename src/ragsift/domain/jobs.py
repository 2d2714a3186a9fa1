"""Ingestion jobs that worker processes lease from the database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class JobKind(StrEnum):
    PROCESS = "process"  # a freshly accepted (PENDING) document
    REINDEX = "reindex"  # re-parse from the stored original


class JobStatus(StrEnum):
    QUEUED = "queued"
    LEASED = "leased"
    DONE = "done"
    FAILED = "failed"


ACTIVE_JOB_STATUSES = (JobStatus.QUEUED, JobStatus.LEASED)


@dataclass(frozen=True, slots=True)
class IngestJob:
    """The latest ingestion job of one document (a document has at most one job row).

    `attempts` counts leases taken; a lease that expires (its worker died) or a run that
    raised counts as a failed attempt, and after `max_attempts` the document is FAILED.
    """

    id: str
    document_id: str
    kind: JobKind
    status: JobStatus
    attempts: int
    max_attempts: int
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    last_error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
