"""The accept/process split of ingestion and the background worker around it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from api.api_helpers import HOTELS, LEAVE, SMALL_CHUNKS
from api.conftest import open_api
from ragsift.api.worker import IngestionWorker
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import DocumentScope, DocumentStatus
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.pipeline import IngestOutcome


def test_accept_stores_a_pending_document_and_process_makes_it_ready(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    try:
        kb = container.ingestion.ensure_kb("docs")
        accepted = container.ingestion.accept(kb, "hotels.md", HOTELS, DocumentScope())
        assert accepted.document.status == DocumentStatus.PENDING
        assert container.index.count() == 0

        processed = container.ingestion.process(accepted.document.id)

        assert processed.document.status == DocumentStatus.READY
        assert processed.chunks == container.index.count() > 0
        again = container.ingestion.accept(kb, "copy.md", HOTELS, DocumentScope())
        assert again.duplicate and again.document.id == accepted.document.id
    finally:
        container.close()


def test_accept_records_unsupported_and_oversized_files_as_failed(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path, max_file_bytes=100, **SMALL_CHUNKS))
    try:
        kb = container.ingestion.ensure_kb("docs")
        exe = container.ingestion.accept(kb, "tool.exe", b"MZ")
        big = container.ingestion.accept(kb, "big.txt", b"x" * 101)
        assert exe.document.status == big.document.status == DocumentStatus.FAILED
        assert "over the limit" in (big.document.error or "")
    finally:
        container.close()


def test_documents_left_pending_by_a_stopped_server_are_finished_on_the_next_start(
    tmp_path: Path,
) -> None:
    container = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    try:
        kb = container.ingestion.ensure_kb("docs")
        pending = container.ingestion.accept(kb, "hotels.md", HOTELS).document.id
        # the process that accepted it is gone (this one lives on, so say so)
        container.repository.set_owner(pending, None)
    finally:
        container.close()

    with open_api(tmp_path) as api:
        assert api.wait_settled(pending)["status"] == "READY"


def test_shutdown_abandons_a_document_still_running_at_the_timeout_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    container = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    embedded = threading.Event()
    release = threading.Event()
    process = container.ingestion.process

    def stuck_after_embedding(document_id: str, _: Progress | None = None) -> IngestOutcome:
        def progress(_embedded: int) -> None:
            embedded.set()
            release.wait(timeout=60)  # a huge document, as far as the worker can tell

        return process(document_id, progress)

    monkeypatch.setattr(container.ingestion, "process", stuck_after_embedding)
    worker = IngestionWorker(container.ingestion, container.repository, workers=1)
    try:
        kb = container.ingestion.ensure_kb("docs")
        running = worker.accept(kb, "hotels.md", HOTELS, DocumentScope()).document.id
        queued = worker.accept(kb, "leave.md", LEAVE, DocumentScope()).document.id
        assert embedded.wait(timeout=30)
        assert worker.running() == [running]

        assert worker.shutdown(timeout_s=0.1) == [running]

        statuses = {d.id: d.status for d in container.repository.list_documents(kb.id)}
        assert statuses == {running: DocumentStatus.INDEXING, queued: DocumentStatus.PENDING}
    finally:
        release.set()
        worker.wait_idle(timeout=30)
        container.close()
