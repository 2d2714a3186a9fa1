"""A full disk at each write of an ingest (facts, BM25, dense, original, cache) fails only
the document being written, with the no-space reason, and leaves the KB searchable."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from ragsift.adapters import embedding_cache
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.adapters.embedded_index.dense_log import DenseFiles
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.errors import StorageFull
from ragsift.domain.models import CHILD_LEVEL, Document, DocumentStatus
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.files import FileResult, find_files, ingest_files
from ragsift.processes import Owner, this_process


def _sqlite_full() -> Exception:
    """What SQLAlchemy raises when SQLite cannot grow its file (SQLITE_FULL)."""
    return OperationalError("UPDATE documents SET ...", {},
                            sqlite3.OperationalError("database or disk is full"))


def _enospc() -> Exception:
    return OSError(errno.ENOSPC, "No space left on device")


def _tantivy_full() -> Exception:
    """tantivy reports the Rust io error as a ValueError carrying its text."""
    return ValueError("An IO error occurred: 'No space left on device (os error 28)'")


# the write each case fails: (class, method, error)
WRITES: dict[str, tuple[type, str, Callable[[], Exception]]] = {
    "facts": (SqlRepository, "commit_draft", _sqlite_full),
    "bm25": (TantivyBm25Store, "upsert", _tantivy_full),
    "dense": (DenseFiles, "append", _enospc),
    "original": (LocalObjectStore, "put", _enospc),
}


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    built = build(Settings(data_dir=tmp_path / "data", chunk_tokens=32, chunk_overlap_tokens=0))
    yield built
    built.close()


def _ingest(container: Container, folder: Path, name: str, text: str) -> FileResult:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, "utf-8")
    service = container.ingestion
    kb = service.ensure_kb("kb")
    results, _ = ingest_files(service, kb, find_files([folder / name]).files)
    return results[0]


def _fail(error: Callable[[], Exception]) -> Callable[..., Any]:
    def full(*_: Any, **__: Any) -> Any:
        raise error()
    return full


def _document(container: Container, name: str) -> Document:
    kb = container.repository.get_kb_by_name("kb")
    assert kb is not None
    return next(d for d in container.repository.list_documents(kb.id) if d.filename == name)


def _assert_kb_intact(container: Container) -> None:
    """The earlier document is READY and found; index and facts hold the same chunks."""
    kb = container.repository.get_kb_by_name("kb")
    assert kb is not None
    container.ingestion.recover(kb.id)  # what the next command does first
    assert _document(container, "earlier.md").status == DocumentStatus.READY
    live = sum(1 for d in container.repository.list_documents(kb.id)
               for c in container.repository.list_chunks(d.id)
               if c.level == CHILD_LEVEL and c.valid_to_seq == 0)
    index = container.index
    assert (index.count(), index.sparse_count()) == (live, live)  # type: ignore[attr-defined]
    request = SearchRequest(query="zebramarker", kb_id=kb.id, top_k=3)
    hits = asyncio.run(container.retrieval.search(request)).hits
    assert hits and hits[0].filename == "earlier.md"


@pytest.mark.parametrize("write", list(WRITES))
def test_a_full_disk_at_each_write_fails_the_document_with_the_no_space_reason(
    container: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str,
) -> None:
    folder = tmp_path / "files"
    earlier = _ingest(container, folder, "earlier.md", "# Earlier\n\nzebramarker lives here.\n")
    assert earlier.outcome is not None
    assert earlier.outcome.document.status == DocumentStatus.READY
    cls, method, error = WRITES[write]
    monkeypatch.setattr(cls, method, _fail(error))
    late = _ingest(container, folder, "late.md",
                   "# Late\n\n" + "a paragraph about quokkas and their habits. " * 30)
    monkeypatch.undo()
    assert late.outcome is not None, late.error
    document = _document(container, "late.md")
    assert document.status == DocumentStatus.FAILED
    reason = document.error or ""
    data_dir = str(tmp_path / "data")
    assert reason.startswith(f"no space left on the data directory {data_dir} (needed ~"), reason
    assert " MB" in reason and "free" in reason
    assert "sqlalche.me" not in reason and "Error" not in reason
    _assert_kb_intact(container)


def test_a_failed_status_the_full_disk_refuses_leaves_the_document_for_the_next_run(
    container: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "files"
    _ingest(container, folder, "earlier.md", "# Earlier\n\nzebramarker lives here.\n")
    real_set_status = SqlRepository.set_status

    def no_room_for_failed(self: SqlRepository, document_id: str, status: DocumentStatus,
                           error: str | None = None) -> None:
        if status == DocumentStatus.FAILED:
            raise _sqlite_full()
        real_set_status(self, document_id, status, error)

    monkeypatch.setattr(SqlRepository, "commit_draft", _fail(_sqlite_full))
    monkeypatch.setattr(SqlRepository, "set_status", no_room_for_failed)
    with pytest.raises(StorageFull, match=r"^no space left on the data directory .*late\.md "
                       r"could not be marked FAILED and is resumed by the next run"):
        _ingest(container, folder, "late.md", "# Late\n\nquokkas " * 20)
    monkeypatch.undo()
    late = _document(container, "late.md")
    assert late.status not in (DocumentStatus.READY, DocumentStatus.FAILED)
    # the next run: this process has ended, the space is back; its recovery finishes it
    gone = this_process()
    container.repository.set_owner(late.id, Owner(gone.host, gone.boot_id, 2**22 + 1, 1).token())
    kb = container.repository.get_kb_by_name("kb")
    assert kb is not None
    assert container.ingestion.recover(kb.id) == [late.id]
    outcome = container.ingestion.process_many([late.id])[0]
    assert outcome.document.status == DocumentStatus.READY
    _assert_kb_intact(container)


def test_the_embedding_cache_leaves_the_last_free_space_to_the_facts_and_the_index(
    container: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cache that filled the disk made the index write fail, then the FAILED status."""
    cache = container.embedder
    real_usage = embedding_cache.shutil.disk_usage

    def almost_full(path: Any) -> Any:
        usage = real_usage(path)
        return usage._replace(free=embedding_cache.RESERVE_BYTES + 1000)

    monkeypatch.setattr(embedding_cache.shutil, "disk_usage", almost_full)
    before = cache._db.execute("SELECT count(*) FROM passage_embeddings").fetchone()[0]
    result = _ingest(container, tmp_path / "files", "earlier.md",
                     "# Earlier\n\nzebramarker lives here.\n")
    assert result.outcome is not None
    assert result.outcome.document.status == DocumentStatus.READY  # the cache is optional
    after = cache._db.execute("SELECT count(*) FROM passage_embeddings").fetchone()[0]
    assert after == before
    monkeypatch.undo()
    _ingest(container, tmp_path / "files", "other.md", "# Other\n\nquokkas live here.\n")
    grown = cache._db.execute("SELECT count(*) FROM passage_embeddings").fetchone()[0]
    assert grown > after  # with room again it is written


def test_a_cache_write_the_full_disk_refuses_does_not_fail_the_document(
    container: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    class FullDb:
        """The cache's connection on a full disk: reads work, every write is refused."""

        def __init__(self, real: sqlite3.Connection) -> None:
            self.real = real

        def execute(self, sql: str, *args: Any) -> Any:
            if sql.startswith(("SELECT", "ROLLBACK")):
                return self.real.execute(sql, *args)
            raise sqlite3.OperationalError("database or disk is full")

        def executemany(self, *_: Any) -> Any:
            raise sqlite3.OperationalError("database or disk is full")

    cache = container.embedder
    monkeypatch.setattr(cache, "_db", FullDb(cache._db))
    result = _ingest(container, tmp_path / "files", "earlier.md",
                     "# Earlier\n\nzebramarker lives here.\n")
    monkeypatch.undo()
    assert result.outcome is not None
    assert result.outcome.document.status == DocumentStatus.READY
    _assert_kb_intact(container)
