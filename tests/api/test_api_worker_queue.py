"""RAGSIFT_INGEST_QUEUE=database: the API queues jobs for worker processes, never ingests."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from api.api_helpers import HOTELS, SMALL_CHUNKS
from api.conftest import open_api
from ragsift.adapters.sql.job_queue import SqlJobQueue
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.jobs import JobKind, JobStatus
from ragsift.domain.models import DocumentStatus
from ragsift.ingestion.job_worker import JobWorker

DATABASE_MODE = {"ingest_queue": "database"}


def run_worker(data_dir: Path) -> int:
    container = build(Settings(data_dir=data_dir, **SMALL_CHUNKS))
    queue = SqlJobQueue(container.settings.resolved_database_url)
    try:
        worker = JobWorker(container.ingestion, queue, lease_s=30, poll_s=0.05)
        return worker.run(threading.Event(), drain=True)
    finally:
        queue.close()
        container.close()


def test_uploads_become_queued_jobs_that_a_worker_process_runs(tmp_path: Path) -> None:
    with open_api(tmp_path, **DATABASE_MODE) as api:
        kb_id = api.create_kb()
        (document_id,) = api.upload_ids(kb_id, {"hotels.md": HOTELS})
        queue = SqlJobQueue(api.container.settings.resolved_database_url)
        job = queue.get(document_id)
        assert job is not None and (job.kind, job.status) == (JobKind.PROCESS, JobStatus.QUEUED)
        time.sleep(1.0)  # an in-process worker would have finished this small file by now
        assert api.client.get(f"/api/documents/{document_id}").json()["status"] == "PENDING"

    assert run_worker(tmp_path) == 1

    with open_api(tmp_path, **DATABASE_MODE) as api:
        assert api.wait_settled(document_id)["status"] == "READY"
        assert api.search(kb_id, "hotel limit per night")
        response = api.client.post(f"/api/documents/{document_id}/reindex")
        assert response.status_code == 202, response.text
        job = queue.get(document_id)
        assert job is not None and (job.kind, job.status, job.attempts) == (
            JobKind.REINDEX, JobStatus.QUEUED, 0
        )
        # the KB-wide reindex skips the document that now waits for its job
        response = api.client.post(f"/api/kbs/{kb_id}/reindex")
        assert response.json() == {"queued": [], "skipped": [
            {"id": document_id, "status": "PENDING", "reason": "the document is PENDING"}
        ]}
    queue.close()


def test_documents_left_pending_get_a_job_when_the_api_starts(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    try:
        kb = container.ingestion.ensure_kb("docs")
        document_id = container.ingestion.accept(kb, "hotels.md", HOTELS).document.id
        # the process that accepted it is gone (this one lives on, so say so)
        container.repository.set_owner(document_id, None)
    finally:
        container.close()
    queue = SqlJobQueue(f"sqlite:///{(tmp_path / 'ragsift.sqlite').resolve()}")
    assert queue.get(document_id) is None

    with open_api(tmp_path, **DATABASE_MODE) as api:
        job = queue.get(document_id)
        assert job is not None and job.status == JobStatus.QUEUED
        document = api.container.repository.get_document(document_id)
        assert document is not None and document.status == DocumentStatus.PENDING
    queue.close()
