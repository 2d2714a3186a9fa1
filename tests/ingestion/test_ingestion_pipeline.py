"""Ingestion end to end on the embedded default: real parsers, e5, tantivy, matrix and SQLite."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from pypdf import PdfWriter

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult

HANDBOOK = """# Employee Handbook

## Annual leave

Employees accrue fifteen days of paid annual leave per year. Up to five unused days carry over.

## 报销

差旅费用须在出差结束后 30 天内提交报销申请，住宿标准为每晚 500 元。
"""
NOTES = "Release v2.4.1 (2024-03-18): fixed error E-104 when Wi-Fi authentication failed.\n"


def write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def encrypted_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt(user_password="secret", owner_password="owner")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", max_file_bytes=4096)


@pytest.fixture
def app(settings: Settings) -> Iterator[Container]:
    container = build(settings)
    yield container
    container.close()


def search(app: Container, kb_id: str, query: str, **fields: object) -> RetrievalResult:
    request = SearchRequest.model_validate({"query": query, "kb_id": kb_id, **fields})
    return asyncio.run(app.retrieval.search(request))


def test_documents_move_to_ready_with_parents_children_and_index_entries(
    app: Container, tmp_path: Path
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    outcome = app.ingestion.ingest_path(kb, write(tmp_path, "handbook.md", HANDBOOK))
    document = outcome.document
    assert document.status == DocumentStatus.READY and document.error is None
    chunks = app.repository.list_chunks(document.id)
    children = [c for c in chunks if c.level == CHILD_LEVEL]
    assert len(children) == outcome.chunks == app.index.count() == 2
    assert {c.heading_path for c in children} == {
        ("Employee Handbook", "Annual leave"), ("Employee Handbook", "报销")
    }
    result = search(app, kb.id, "住宿每晚多少钱")
    assert result.hits[0].heading_path == ("Employee Handbook", "报销")
    assert result.hits[0].dense_rank == 1 and result.hits[0].sparse_rank == 1


def test_reingesting_the_same_bytes_is_detected_and_adds_nothing(
    app: Container, tmp_path: Path
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    path = write(tmp_path, "handbook.md", HANDBOOK)
    first = app.ingestion.ingest_path(kb, path)
    again = app.ingestion.ingest_path(kb, write(tmp_path, "copy.md", HANDBOOK))
    assert again.duplicate and again.document.id == first.document.id
    assert len(app.repository.list_documents(kb.id)) == 1
    assert app.index.count() == 2


def test_bad_documents_fail_with_a_reason_while_the_rest_of_the_batch_is_ingested(
    app: Container, tmp_path: Path
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    files = {
        "corrupt.pdf": b"%PDF-1.7\n1 0 obj << /Type /Catalog",
        "locked.pdf": encrypted_pdf(),
        "empty.txt": b"",
        "binary.txt": bytes(range(256)) * 4,
        "tool.exe": b"MZ\x90\x00",
        "huge.txt": ("word " * 2000).encode(),
        "notes.txt": NOTES,
    }
    outcomes = {name: app.ingestion.ingest_path(kb, write(tmp_path, name, data))
                for name, data in files.items()}
    reasons = {name: o.document.error for name, o in outcomes.items()}
    assert outcomes["notes.txt"].document.status == DocumentStatus.READY
    assert "corrupt" in (reasons["corrupt.pdf"] or "")
    assert "encrypted" in (reasons["locked.pdf"] or "")
    assert reasons["empty.txt"] == "file is empty"
    assert "binary" in (reasons["binary.txt"] or "")
    assert "unsupported file type '.exe'" in (reasons["tool.exe"] or "")
    assert "over the limit of 4096 bytes" in (reasons["huge.txt"] or "")
    failed = app.repository.list_documents(kb.id, DocumentStatus.FAILED)
    assert len(failed) == 6
    assert app.index.count() == 1
    assert search(app, kb.id, "E-104").hits[0].filename == "notes.txt"


def test_oversized_files_are_rejected_before_being_read(
    app: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    path = write(tmp_path, "huge.md", "x" * 5000)

    def refuse(self: Path) -> bytes:
        raise AssertionError("an oversized file must not be read")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    outcome = app.ingestion.ingest_path(kb, path)
    assert outcome.document.status == DocumentStatus.FAILED
    assert outcome.document.sha256 is None


def test_deleting_a_document_removes_it_from_facts_and_both_indexes(
    app: Container, tmp_path: Path
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    doc = app.ingestion.ingest_path(kb, write(tmp_path, "handbook.md", HANDBOOK)).document
    notes = app.ingestion.ingest_path(kb, write(tmp_path, "notes.txt", NOTES)).document
    app.ingestion.delete_document(doc.id)
    assert app.repository.get_document(doc.id) is None
    assert app.repository.list_chunks(doc.id) == []
    scope = SearchFilter(kb_id=kb.id)
    vector = app.embedder.embed_query("annual leave")
    assert {h.document_id for h in app.index.search_dense(vector, scope, 10)} == {notes.id}
    assert app.index.search_sparse("annual leave fifteen days", scope, 10) == []


def test_search_sees_only_ready_documents(app: Container, tmp_path: Path) -> None:
    kb = app.ingestion.ensure_kb("hr")
    doc = app.ingestion.ingest_path(kb, write(tmp_path, "handbook.md", HANDBOOK)).document
    app.repository.set_status(doc.id, DocumentStatus.INDEXING)
    result = search(app, kb.id, "annual leave")
    assert result.hits == ()
    assert result.trace.ready_filtered_count == 2


def test_the_index_and_facts_survive_a_restart(settings: Settings, tmp_path: Path) -> None:
    first = build(settings)
    kb = first.ingestion.ensure_kb("hr")
    first.ingestion.ingest_path(kb, write(tmp_path, "handbook.md", HANDBOOK))
    before = [h.chunk_id for h in search(first, kb.id, "annual leave carry over").hits]
    first.close()
    second = build(settings)
    try:
        after = [h.chunk_id for h in search(second, kb.id, "annual leave carry over").hits]
        assert after == before and len(after) == 2
    finally:
        second.close()


@pytest.mark.parametrize("hostile", ['hr" OR 1==1', "kb:* OR", "\\\"'); DROP TABLE chunks;--"])
def test_hostile_filter_values_are_literal_and_match_nothing(
    app: Container, tmp_path: Path, hostile: str
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    app.ingestion.ingest_path(kb, write(tmp_path, "handbook.md", HANDBOOK))
    assert search(app, kb.id, "annual leave", sources=(hostile,)).hits == ()
    by_id = search(app, kb.id, "annual leave", document_ids=(hostile,))
    assert by_id.hits == () and by_id.trace.scope.empty_reason is not None
    assert len(search(app, kb.id, "annual leave").hits) == 2


def test_knowledge_bases_are_isolated(app: Container, tmp_path: Path) -> None:
    hr = app.ingestion.ensure_kb("hr")
    it = app.ingestion.ensure_kb("it")
    app.ingestion.ingest_path(hr, write(tmp_path, "handbook.md", HANDBOOK))
    app.ingestion.ingest_path(it, write(tmp_path, "notes.txt", NOTES))
    assert {h.filename for h in search(app, it.id, "annual leave days").hits} == {"notes.txt"}
    assert {h.filename for h in search(app, hr.id, "E-104 error").hits} == {"handbook.md"}


def test_process_many_writes_the_index_once_per_batch_and_fails_bad_documents_alone(
    app: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    writes: list[int] = []
    upsert = app.index.upsert

    def counted(records: list[object], vectors: object) -> None:
        writes.append(len(records))
        upsert(records, vectors)  # type: ignore[arg-type]

    monkeypatch.setattr(app.index, "upsert", counted)
    accepted = [
        app.ingestion.accept(kb, "handbook.md", HANDBOOK.encode()),
        app.ingestion.accept(kb, "broken.pdf", b"%PDF-1.7 not really"),
        app.ingestion.accept(kb, "notes.txt", NOTES.encode()),
    ]
    outcomes = app.ingestion.process_many([o.document.id for o in accepted])
    assert [o.document.status for o in outcomes] == [
        DocumentStatus.READY, DocumentStatus.FAILED, DocumentStatus.READY
    ]
    assert writes == [3]  # 2 handbook children + 1 notes child, one index write
    assert search(app, kb.id, "E-104").hits[0].filename == "notes.txt"


def test_a_failed_index_write_fails_every_document_of_that_batch(
    app: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = app.ingestion.ensure_kb("hr")

    def broken(records: object, vectors: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(app.index, "upsert", broken)
    accepted = [app.ingestion.accept(kb, "handbook.md", HANDBOOK.encode()),
                app.ingestion.accept(kb, "notes.txt", NOTES.encode())]
    outcomes = app.ingestion.process_many([o.document.id for o in accepted])
    assert {o.document.status for o in outcomes} == {DocumentStatus.FAILED}
    assert all("disk full" in (o.document.error or "") for o in outcomes)
    assert app.repository.list_chunks(accepted[0].document.id) == []
