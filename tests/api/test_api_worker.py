"""The accept/process split of ingestion and the background worker around it."""

from __future__ import annotations

from pathlib import Path

from api.api_helpers import HOTELS, SMALL_CHUNKS
from api.conftest import open_api
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import DocumentScope, DocumentStatus


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
    finally:
        container.close()

    with open_api(tmp_path) as api:
        assert api.wait_settled(pending)["status"] == "READY"
