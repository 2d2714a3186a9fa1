"""Port of the ingestion job queue."""

from __future__ import annotations

from typing import Protocol

from ragsift.domain.jobs import IngestJob, JobKind


class JobQueue(Protocol):
    """Ingestion jobs in the database, leased by any number of worker processes."""

    def enqueue(self, document_id: str, kind: JobKind, max_attempts: int) -> IngestJob:
        """Queue a job for the document; one already queued or leased is returned as is."""
        ...

    def claim(self, worker_id: str, lease_s: float) -> IngestJob | None:
        """Lease the oldest claimable job (queued, or leased with an expired lease) or None.

        Jobs whose lease expired on their last attempt are given up first: the job and
        its document end FAILED with the reason.
        """
        ...

    def heartbeat(self, job_id: str, worker_id: str, lease_s: float) -> bool:
        """Extend the lease; False when this worker no longer holds it."""
        ...

    def complete(self, job_id: str, worker_id: str) -> bool:
        """Mark the job done; False when this worker no longer held the lease."""
        ...

    def fail(self, job_id: str, worker_id: str, reason: str, retry: bool) -> IngestJob | None:
        """Queue the job again (`retry` and attempts left) or give up: job and document FAILED.

        None when this worker no longer held the lease.
        """
        ...

    def active(self) -> int:
        """Jobs queued or leased (an expired lease counts until another worker takes it)."""
        ...

    def get(self, document_id: str) -> IngestJob | None: ...

    def close(self) -> None: ...
