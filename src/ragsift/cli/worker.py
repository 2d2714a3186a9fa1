"""`ragsift worker`: process ingestion jobs leased from the database queue until stopped.

SIGTERM/SIGINT stop it after the current document, but never later than
RAGSIFT_SHUTDOWN_TIMEOUT_S after the first signal: a document still running then is abandoned
as it is (PARSING/INDEXING) and the process exits 0; its lease expires and another worker
retries the job. A second signal exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from ragsift.cli.common import CliFailure, open_container
from ragsift.cli.options import DataDir
from ragsift.shutdown import ShutdownClock

if TYPE_CHECKING:
    from ragsift.config import Settings
    from ragsift.ingestion.job_worker import JobWorker

logger = logging.getLogger(__name__)

# TEST HOOK, not a setting: seconds to sleep once a document is parsed (before the index or
# the facts are written), so a test can kill the worker mid-document deterministically.
PAUSE_HOOK = "RAGSIFT_TEST_WORKER_PAUSE_S"


def pause_hook_s() -> float:
    """The seconds of the test hook (0 when unset); also read by `ragsift serve`."""
    raw = os.environ.get(PAUSE_HOOK, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise CliFailure(f"{PAUSE_HOOK} must be a number of seconds, not {raw!r}", 2) from None
    if value < 0:
        raise CliFailure(f"{PAUSE_HOOK} must not be negative", 2)
    return value


class _StopSignals:
    """SIGTERM/SIGINT: finish the current document within the bound, then exit.

    Installed before the container is built, so a signal during start-up stops the worker
    too; the shutdown clock, made once the settings are known, starts with the first signal.
    """

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._clock: ShutdownClock | None = None
        self._signum = 0

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)
        threading.Thread(target=self._announce, name="ragsift-stop-log", daemon=True).start()

    def _announce(self) -> None:
        # logged here, not in the handler: a handler that logs while the main thread is inside
        # a write to stderr gets logging's "reentrant call" RuntimeError (seen under load), which
        # escaped before the stop was set, and the worker ran on
        self.stop.wait()
        logger.info("signal %d: stopping after the current document", self._signum)

    def bound_by(self, clock: ShutdownClock) -> None:
        self._clock = clock
        if self.stop.is_set():  # a signal came before the clock existed
            clock.start()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt  # the lease expires and another worker retries the job
        self._signum = signum
        self.stop.set()
        clock = self._clock
        if clock is not None:
            clock.start()


def _abandoning(job_worker: JobWorker, settings: Settings) -> str:
    job = job_worker.current
    if job is None:
        return ""
    return (f"abandoning the job of document {job.document_id}: its lease expires within "
            f"{settings.ingest_lease_s:.0f} s and another worker retries it")


def worker(
    data_dir: DataDir = None,
    drain: Annotated[bool, typer.Option(
        "--drain", help="Exit once no job is queued or leased (default: run until stopped).",
    )] = False,
    health_file: Annotated[Path | None, typer.Option(
        "--health-file", help="Touch this file while the worker is alive: every poll when "
        "idle, every lease renewal when busy (for a container health check).",
    )] = None,
) -> None:
    """Process ingestion jobs from the database queue (uploads with RAGSIFT_INGEST_QUEUE=database).

    Any number of workers may share one PostgreSQL database; several at once need an index
    they can share (Milvus): the embedded index admits one process per data directory.
    """
    from ragsift.bootstrap import build_job_queue
    from ragsift.ingestion.job_worker import JobWorker

    pause_s = pause_hook_s()
    logging.getLogger("ragsift").setLevel(logging.INFO)
    signals = _StopSignals()
    signals.install()
    with open_container(data_dir) as container:
        settings = container.settings
        queue = build_job_queue(settings)
        try:
            job_worker = JobWorker(
                container.ingestion, queue, lease_s=settings.ingest_lease_s,
                poll_s=settings.ingest_poll_s, pause_after_parse_s=pause_s,
                alive=None if health_file is None else health_file.touch,
            )
            # exit code 0 at the deadline too: abandoning the document is the designed stop
            signals.bound_by(ShutdownClock(
                settings.shutdown_timeout_s, exit_code=0,
                describe=lambda: _abandoning(job_worker, settings),
            ))
            logger.info("worker %s started (lease %.1f s)", job_worker.worker_id,
                        settings.ingest_lease_s)
            ran = job_worker.run(signals.stop, drain=drain)
        finally:
            queue.close()
    logger.info("worker %s stopped after %d job(s)", job_worker.worker_id, ran)
