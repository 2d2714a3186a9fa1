"""`ragsift worker` processes on a real PostgreSQL: a worker killed mid-document loses its job
to another worker process, and the document ends READY once, without duplicate chunks. On
SQLite: a SIGTERM mid-document exits within RAGSIFT_SHUTDOWN_TIMEOUT_S, abandoning it."""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.api_helpers import HOTELS
from ragsift.adapters.sql.job_queue import SqlJobQueue
from ragsift.bootstrap import Container, build
from ragsift.cli import worker as worker_module
from ragsift.cli.worker import PAUSE_HOOK
from ragsift.config import Settings
from ragsift.domain.jobs import JobKind, JobStatus
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.domain.requests import SearchRequest
from support.postgres import PostgresServer, postgres_or_skip

LEASE_S = 2.0
QUERY = "hotel limit per night"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    yield from postgres_or_skip()


def start_worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragsift.cli", "worker", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=env,
    )


def wait_for_log(process: subprocess.Popen[str], needle: str, timeout_s: float) -> str:
    """Read the worker's log until a line contains `needle`; the log so far."""
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=0.2):
                line = process.stderr.readline()
                seen.append(line)
                if needle in line:
                    return "".join(seen)
                if not line and process.poll() is not None:
                    break
    raise AssertionError(f"no {needle!r} in the worker's log:\n{''.join(seen)}")


def search_ids(container: Container, kb_id: str) -> list[str]:
    request = SearchRequest(query=QUERY, kb_id=kb_id, top_k=10, small2big=False)
    return [hit.chunk_id for hit in asyncio.run(container.retrieval.search(request)).hits]


def test_a_killed_workers_job_is_retried_by_another_worker_and_ends_ready_once(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    with postgres.fresh_database() as url:
        settings = Settings(data_dir=tmp_path / "data", database_url=url, chunk_tokens=32,
                            chunk_overlap_tokens=0)
        env = {
            **os.environ, "RAGSIFT_DATA_DIR": str(settings.data_dir), "RAGSIFT_DATABASE_URL": url,
            "RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0",
            "RAGSIFT_INGEST_LEASE_S": str(LEASE_S), "RAGSIFT_INGEST_POLL_S": "0.2",
        }
        container = build(settings)
        try:
            kb = container.ingestion.ensure_kb("docs")
            document_id = container.ingestion.accept(kb, "hotels.md", HOTELS).document.id
        finally:
            container.close()
        queue = SqlJobQueue(url)
        try:
            queue.enqueue(document_id, JobKind.PROCESS, max_attempts=3)

            first = start_worker({**env, PAUSE_HOOK: "600"})
            try:
                wait_for_log(first, f"pausing 600.0 s after parsing document {document_id}", 180)
                leased = queue.get(document_id)
                assert leased is not None and leased.status == JobStatus.LEASED
                assert leased.attempts == 1 and f":{first.pid}:" in (leased.lease_owner or "")
                time.sleep(LEASE_S * 1.5)  # renewals keep a paused, living worker's lease
                renewed = queue.get(document_id)
                assert renewed is not None and renewed.lease_owner == leased.lease_owner
                first.send_signal(signal.SIGKILL)
                assert first.wait(timeout=30) == -signal.SIGKILL
            finally:
                first.kill()
                first.wait()
            assert first.stderr is not None
            first.stderr.close()

            # Between the two workers: the document is mid-ingestion and nothing of it shows.
            container = build(settings)
            try:
                document = container.repository.get_document(document_id)
                assert document is not None and document.status == DocumentStatus.INDEXING
                assert container.repository.list_chunks(document_id) == []
                assert search_ids(container, kb.id) == []
            finally:
                container.close()

            alive = tmp_path / "worker.alive"
            second = start_worker(env, "--drain", "--health-file", str(alive))
            try:
                _, log = second.communicate(timeout=300)
            finally:
                second.kill()
            assert second.returncode == 0, log
            assert "(attempt 2 of 3)" in log
            assert alive.is_file()
            done = queue.get(document_id)
            assert done is not None
            assert (done.status, done.attempts, done.lease_owner) == (JobStatus.DONE, 2, None)
        finally:
            queue.close()

        container = build(settings)
        try:
            document = container.repository.get_document(document_id)
            assert document is not None and document.status == DocumentStatus.READY
            children = [c.id for c in container.repository.list_chunks(document_id)
                        if c.level == CHILD_LEVEL]
            assert len(children) == len(set(children)) > 1
            assert container.index.count() == len(children)
            assert container.index.sparse_count() == len(children)  # type: ignore[attr-defined]
            hits = search_ids(container, kb.id)
            assert hits and set(hits) <= set(children)
        finally:
            container.close()


def test_sigterm_mid_document_exits_within_the_bound_and_leaves_the_job_to_its_lease(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", chunk_tokens=32, chunk_overlap_tokens=0)
    container = build(settings)
    try:
        kb = container.ingestion.ensure_kb("docs")
        document_id = container.ingestion.accept(kb, "hotels.md", HOTELS).document.id
    finally:
        container.close()
    queue = SqlJobQueue(settings.resolved_database_url)
    bound_s = 2.0
    env = {
        **os.environ, "RAGSIFT_DATA_DIR": str(settings.data_dir), "RAGSIFT_CHUNK_TOKENS": "32",
        "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0", "RAGSIFT_INGEST_POLL_S": "0.2",
        "RAGSIFT_SHUTDOWN_TIMEOUT_S": str(bound_s),
        PAUSE_HOOK: "600",  # a document that takes ten minutes to ingest
    }
    try:
        queue.enqueue(document_id, JobKind.PROCESS, max_attempts=3)
        worker = start_worker(env)
        try:
            wait_for_log(worker, f"pausing 600.0 s after parsing document {document_id}", 180)
            stopped_at = time.monotonic()
            worker.send_signal(signal.SIGTERM)
            _, log = worker.communicate(timeout=bound_s + 30)
            took_s = time.monotonic() - stopped_at
        finally:
            worker.kill()
            worker.wait()

        assert worker.returncode == 0, log
        assert took_s < bound_s + 2, f"{took_s:.1f} s\n{log}"
        assert f"abandoning the job of document {document_id}" in log
        job = queue.get(document_id)  # its lease runs out; then another worker retries it
        assert job is not None and job.status == JobStatus.LEASED and job.attempts == 1
    finally:
        queue.close()
    container = build(settings)
    try:
        document = container.repository.get_document(document_id)
        assert document is not None and document.status == DocumentStatus.INDEXING
    finally:
        container.close()


def test_the_stop_signal_handler_sets_the_stop_without_writing_a_log_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a handler interrupting the main thread inside a write to stderr must not write itself:
    # logging's "reentrant call" error escaped the handler before the stop was set
    def reentrant(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stderr>'>")

    monkeypatch.setattr(worker_module.logger, "info", reentrant)
    signals = worker_module._StopSignals()
    signals._handle(signal.SIGTERM, None)
    assert signals.stop.is_set()
