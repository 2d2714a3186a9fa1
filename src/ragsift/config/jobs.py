"""Background ingestion jobs, their workers, and how long a process takes to stop."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragsift.config.concern import Concern


class JobSettings(Concern):
    """Ingestion jobs and shutdown."""

    ingest_workers: int = Field(
        default=1, ge=1, le=32, description="threads of the API's background ingestion worker"
    )
    ingest_queue: Literal["inprocess", "database"] = Field(
        default="inprocess",
        description="inprocess: the API ingests uploads in its own thread pool; database: the "
        "API queues jobs in the database and `ragsift worker` processes lease them",
    )
    ingest_lease_s: float = Field(
        default=60.0, gt=0, le=3600,
        description="a worker's lease on a job; renewed every third of it while it works, so "
        "a killed worker's job passes to another worker this long after its last renewal",
    )
    ingest_max_attempts: int = Field(
        default=3, ge=1, le=100,
        description="leases a job may take; then its document is FAILED with the reason",
    )
    ingest_poll_s: float = Field(
        default=1.0, gt=0, le=60, description="how often an idle worker looks for jobs"
    )
    shutdown_timeout_s: float = Field(
        default=30.0, gt=0, le=3600,
        description="the longest `ragsift serve` / `ragsift worker` take to exit after SIGTERM "
        "or SIGINT; a document still being ingested then is abandoned as it is (PARSING or "
        "INDEXING) for the next start to resume",
    )
