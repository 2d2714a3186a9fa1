"""A worker process's loop over the database job queue: lease a job, keep the lease, run it.

Any number of workers may run against one database. A worker renews its lease every third of
its length while it works; one that dies (killed, machine lost) stops renewing, the lease
expires, and another worker takes the job again as a reindex from the stored original. For a
document no KB version holds yet (a first ingestion) that removes whatever the dead worker
wrote to the index; a re-parse under KB versions keeps the rows its versions share. Chunk ids
are stable and the facts' chunks are replaced atomically, so a retried document ends READY
once, without duplicates, and hits are re-checked against the facts, so index rows of an
interrupted attempt never reach a caller.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from types import TracebackType

from ragsift.domain.errors import NotFound
from ragsift.domain.jobs import IngestJob, JobKind
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ports import JobQueue
from ragsift.storage_full import describe, log_failure

logger = logging.getLogger(__name__)


def pause_once(seconds: float, document_id: str) -> Progress:
    """TEST HOOK: a progress callback that sleeps `seconds` at its first call.

    Ingestion reports progress once the first batch is embedded, before anything reaches the
    index or the facts, so a test can stop or kill a process there deterministically.
    """
    paused = False

    def pause(_embedded: int) -> None:
        nonlocal paused
        if not paused:
            paused = True
            logger.warning("test hook: pausing %.1f s after parsing document %s", seconds,
                           document_id)
            time.sleep(seconds)

    return pause


def default_worker_id() -> str:
    """host:pid:random, unique per worker process and readable in the jobs table."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class _Lease:
    """Renews a job's lease in a background thread while the block runs."""

    def __init__(
        self, queue: JobQueue, job: IngestJob, worker_id: str, lease_s: float,
        alive: Callable[[], None],
    ) -> None:
        self._queue = queue
        self._alive = alive
        self._job = job
        self._worker_id = worker_id
        self._lease_s = lease_s
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(
            target=self._renew, name=f"ragsift-lease-{job.id[:8]}", daemon=True
        )

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _renew(self) -> None:
        while not self._stop.wait(self._lease_s / 3):
            try:
                if not self._queue.heartbeat(self._job.id, self._worker_id, self._lease_s):
                    self.lost = True
                    logger.warning("lost the lease on the job of document %s",
                                   self._job.document_id)
                    return
                self._alive()
            except Exception:  # a database hiccup: the next renewal may still make it
                logger.exception("renewing the lease on the job of %s failed",
                                 self._job.document_id)


class JobWorker:
    """Runs ingestion jobs leased from a JobQueue until stopped.

    `pause_after_parse_s` is a TEST HOOK (RAGSIFT_TEST_WORKER_PAUSE_S in `ragsift worker`):
    the worker sleeps that long once a document is parsed, chunked and its first batch
    embedded, before anything reaches the index or the facts, so a test can kill it there
    deterministically. The lease is still renewed during the pause.

    `alive` is called on every turn of the loop and every lease renewal: a liveness signal
    (`ragsift worker --health-file` touches a file for a container health check).
    """

    def __init__(
        self, ingestion: IngestionService, queue: JobQueue, *, lease_s: float,
        poll_s: float, worker_id: str | None = None, pause_after_parse_s: float = 0.0,
        alive: Callable[[], None] | None = None,
    ) -> None:
        if lease_s <= 0 or poll_s <= 0 or pause_after_parse_s < 0:
            raise ValueError("lease_s and poll_s must be positive, pause_after_parse_s >= 0")
        self._ingestion = ingestion
        self._queue = queue
        self._lease_s = lease_s
        self._poll_s = poll_s
        self._pause_s = pause_after_parse_s
        self._alive = alive or (lambda: None)
        self.worker_id = worker_id or default_worker_id()
        self.current: IngestJob | None = None  # the job being run, for a shutdown's log

    def run(self, stop: threading.Event, drain: bool = False) -> int:
        """Work until `stop` is set, finishing the current job; how many jobs ran.

        With `drain`, also return once no job is queued or leased (a job whose worker died
        counts until its lease expires and this worker has run it).
        """
        ran = 0
        while not stop.is_set():
            self._alive()
            try:
                if self.run_once():
                    ran += 1
                    continue
                if drain and self._queue.active() == 0:
                    break
            except Exception:  # the database may be down for a while: keep trying
                logger.exception("worker %s could not reach the job queue", self.worker_id)
            stop.wait(self._poll_s)
        return ran

    def run_once(self) -> bool:
        """Lease one job and run it; False when none was claimable."""
        job = self._queue.claim(self.worker_id, self._lease_s)
        if job is None:
            return False
        self.current = job
        try:
            with _Lease(self._queue, job, self.worker_id, self._lease_s, self._alive) as lease:
                self._run(job)
        finally:
            self.current = None
        if lease.lost:
            logger.warning("document %s was taken over by another worker meanwhile",
                           job.document_id)
        return True

    def _run(self, job: IngestJob) -> None:
        progress = self._pause_hook(job)
        # A retry starts from the original again, as a reindex (which cleans up after an
        # interrupted first ingestion).
        from_scratch = job.kind == JobKind.REINDEX or job.attempts > 1
        try:
            if from_scratch:
                outcome = self._ingestion.reindex(job.document_id, progress)
            else:
                outcome = self._ingestion.process(job.document_id, progress)
        except NotFound as exc:  # deleted meanwhile (the job row goes with it) or no original
            self._queue.fail(job.id, self.worker_id, str(exc), retry=False)
            return
        except Exception as exc:
            log_failure(logger, exc, "job of document %s failed", job.document_id)
            self._queue.fail(job.id, self.worker_id, describe(exc), retry=True)
            return
        # A document that FAILED (bad file) is a finished job: retrying cannot help.
        self._queue.complete(job.id, self.worker_id)
        logger.info("document %s is %s (%d chunks)", job.document_id,
                    outcome.document.status.value, outcome.chunks)

    def _pause_hook(self, job: IngestJob) -> Progress | None:
        if self._pause_s <= 0:
            return None
        return pause_once(self._pause_s, job.document_id)
