"""`ragsift worker`: process ingestion jobs leased from the database queue until stopped."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from ragsift.bootstrap import build_job_queue
from ragsift.cli_common import CliFailure, DataDir, open_container
from ragsift.ingestion.job_worker import JobWorker

logger = logging.getLogger(__name__)

# TEST HOOK, not a setting: seconds to sleep once a document is parsed (before the index or
# the facts are written), so a test can kill the worker mid-document deterministically.
PAUSE_HOOK = "RAGSIFT_TEST_WORKER_PAUSE_S"


def _pause_s() -> float:
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


def _stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM/SIGINT: finish the current document, then exit; a second one exits at once."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # the lease expires and another worker retries the job
        logger.info("signal %d: stopping after the current document", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


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
    pause_s = _pause_s()
    logging.getLogger("ragsift").setLevel(logging.INFO)
    stop = threading.Event()
    _stop_on_signals(stop)
    with open_container(data_dir) as container:
        settings = container.settings
        queue = build_job_queue(settings)
        try:
            job_worker = JobWorker(
                container.ingestion, queue, lease_s=settings.ingest_lease_s,
                poll_s=settings.ingest_poll_s, pause_after_parse_s=pause_s,
                alive=None if health_file is None else health_file.touch,
            )
            logger.info("worker %s started (lease %.1f s)", job_worker.worker_id,
                        settings.ingest_lease_s)
            ran = job_worker.run(stop, drain=drain)
        finally:
            queue.close()
    logger.info("worker %s stopped after %d job(s)", job_worker.worker_id, ran)
