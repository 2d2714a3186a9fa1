"""A read-only view of the SQLite database for a CLI search, on the standard library's sqlite3.

Importing SQLAlchemy and the ORM tables cost a CLI search ~0.55 CPU-s and ~19 MB of its ~2.5
CPU-s (measured 2026-12-06, docs/benchmarks.md). The reads a search makes on every query are
answered here with plain statements (the same columns and conversions as SqlRepository's);
every other method of the ports (a pinned version, tuned fusion, FAQ entries, ...) goes to a
SqlRepository opened on first use (ragsift.adapters.lazy_sql_repository), so results never
depend on which of the two answered.

The reader opens only a database already at the newest schema (SqlRepository migrates; a
search must not run on an older schema), never writes (`PRAGMA query_only`), and is used
for file databases alone: PostgreSQL and in-memory URLs keep SqlRepository.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.adapters.chunk_values import CHUNK_VALUE_COLUMNS, chunk_from_values, json_value
from ragsift.adapters.lazy_sql_repository import LazySqlRepository, OpenSqlRepository
from ragsift.adapters.schema_head import head_revision
from ragsift.domain.filters import valid_at
from ragsift.domain.kb_settings import KbSettingsRecord
from ragsift.domain.models import Chunk, Document, DocumentScope, DocumentStatus, KnowledgeBase

if TYPE_CHECKING:
    from ragsift.adapters.sql import SqlRepository

# as SqlRepository's engine: a writer's commit may hold the database this long
BUSY_TIMEOUT_S = 5.0
IN_LIST = 500  # ids per IN list: old SQLite builds allow 999 bound variables
SEARCHABLE = (DocumentStatus.READY.value, DocumentStatus.RETIRED.value)

_CHUNKS = f"SELECT {', '.join(CHUNK_VALUE_COLUMNS)} FROM chunks WHERE "
_KB = "SELECT id, name, embedding_model, embedding_dim, analyzer, created_at FROM knowledge_bases"
_DOCUMENT_COLUMNS = (
    "id, kb_id, filename, media_type, sha256, size, status, error, category, source, "
    "tenant_id, dataset_id, visibility, allowed_roles, metadata, created_at, updated_at, "
    "doc_key, source_mtime, replacing_owner, warnings"
)
_VALID_FROM = CHUNK_VALUE_COLUMNS.index("valid_from_seq")
_VALID_TO = CHUNK_VALUE_COLUMNS.index("valid_to_seq")


def sqlite_path(url: str) -> Path | None:
    """The file of a plain `sqlite:///PATH` URL; None for anything else (PostgreSQL, memory,
    URL options), which SqlRepository serves."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url:
        return None
    path = url[len(prefix):]
    return None if path in ("", ":memory:") else Path(path)


def open_reader(url: str, full: OpenSqlRepository) -> SqliteSearchReader | None:
    """A reader of the database at `url` if it is a SQLite file at the newest schema, else
    None (the caller opens SqlRepository, which creates or migrates it). `full`: opens the
    SqlRepository that answers every call the reader does not."""
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return None
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
    try:
        connection.execute("PRAGMA query_only=ON")
        versions = [row[0] for row in connection.execute("SELECT version_num FROM alembic_version")]
    except sqlite3.Error:
        versions = []  # no alembic_version table: a database SqlRepository must create
    if versions != [head_revision()]:
        connection.close()
        return None
    return SqliteSearchReader(connection, full)


def open_database(url: str) -> SqliteSearchReader | SqlRepository:
    """The reader of a SQLite file at the newest schema, else SqlRepository (which creates or
    migrates the database): for the commands that only read it (a search, the listings)."""

    def full() -> SqlRepository:
        from ragsift.adapters.sql import SqlRepository

        return SqlRepository(url)

    reader = open_reader(url, full)
    return reader if reader is not None else full()


def _utc(value: str | None) -> datetime | None:
    """A stored timestamp (SQLAlchemy's SQLite text, naive UTC) as an aware UTC datetime."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _kb(row: Sequence[Any]) -> KnowledgeBase:
    id_, name, model, dim, analyzer, created_at = row
    return KnowledgeBase(id=id_, name=name, embedding_model=model, embedding_dim=dim,
                         analyzer=dict(json_value(analyzer)), created_at=_utc(created_at))


def _document(row: Sequence[Any]) -> Document:
    (id_, kb_id, filename, media_type, sha256, size, status, error, category, source,
     tenant_id, dataset_id, visibility, allowed_roles, meta, created_at, updated_at, doc_key,
     source_mtime, replacing_owner, warnings) = row
    return Document(
        id=id_, kb_id=kb_id, filename=filename, media_type=media_type, sha256=sha256,
        size=size, status=DocumentStatus(status), error=error, category=category,
        scope=DocumentScope(source=source, tenant_id=tenant_id, dataset_id=dataset_id,
                            visibility=visibility,
                            allowed_roles=tuple(json_value(allowed_roles) or ())),
        metadata=dict(json_value(meta)), created_at=_utc(created_at),
        updated_at=_utc(updated_at), key=doc_key, source_mtime=source_mtime,
        replacing=replacing_owner is not None, warnings=tuple(json_value(warnings) or ()),
    )


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def _parts(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), IN_LIST):
        yield items[start:start + IN_LIST]


class SqliteSearchReader(LazySqlRepository):
    """The reads of a search (Repository, VersionReader, the KB settings store) on sqlite3;
    the ports' other methods are SqlRepository's, opened on first use (LazySqlRepository).
    Thread-safe: one connection under a lock."""

    def __init__(self, connection: sqlite3.Connection, full: OpenSqlRepository) -> None:
        super().__init__(full)
        self._connection = connection
        self._lock = threading.Lock()

    def close(self) -> None:
        self._connection.close()
        super().close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._connection.execute(sql, tuple(params)).fetchall()

    # knowledge bases and their settings

    def get_kb(self, kb_id: str) -> KnowledgeBase | None:
        rows = self._rows(f"{_KB} WHERE id = ?", (kb_id,))
        return _kb(rows[0]) if rows else None

    def get_kb_by_name(self, name: str) -> KnowledgeBase | None:
        rows = self._rows(f"{_KB} WHERE name = ? LIMIT 1", (name,))
        return _kb(rows[0]) if rows else None

    def list_kbs(self) -> list[KnowledgeBase]:
        return [_kb(row) for row in self._rows(f"{_KB} ORDER BY name")]

    def get_kb_settings(self, kb_id: str) -> KbSettingsRecord:
        rows = self._rows("SELECT overrides, built, updated_at FROM kb_settings WHERE kb_id = ?",
                          (kb_id,))
        if not rows:
            return KbSettingsRecord(kb_id)
        overrides, built, updated_at = rows[0]
        return KbSettingsRecord(kb_id, dict(json_value(overrides)), json_value(built),
                                _utc(updated_at))

    # documents

    def list_documents(self, kb_id: str, status: DocumentStatus | None = None) -> list[Document]:
        where, params = ("kb_id = ?", [kb_id]) if status is None else (
            "kb_id = ? AND status = ?", [kb_id, status.value])
        return [_document(row) for row in self._rows(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE {where} ORDER BY created_at, id",
            params)]

    def document_metadata(self, document_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = list(dict.fromkeys(document_ids))
        found: dict[str, dict[str, Any]] = {}
        for part in _parts(wanted):
            found.update((doc_id, dict(json_value(meta) or {})) for doc_id, meta in self._rows(
                f"SELECT id, metadata FROM documents WHERE id IN ({_marks(len(part))})", part))
        return found

    # chunks

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        unique = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        for part in _parts(unique):
            for values in self._rows(f"{_CHUNKS}id IN ({_marks(len(part))})", part):
                found[values[0]] = chunk_from_values(values)
        return [found[chunk_id] for chunk_id in chunk_ids if chunk_id in found]

    def list_chunks(self, document_id: str) -> list[Chunk]:
        return [chunk_from_values(values) for values in self._rows(
            f"{_CHUNKS}document_id = ? ORDER BY level, ordinal, id", (document_id,))]

    def get_neighbours(self, anchors: Sequence[Chunk], window: int) -> list[Chunk]:
        if window < 0:
            raise ValueError("window must be >= 0")
        if window == 0 or not anchors:
            return []
        # few anchors (a top_k) and one indexed lookup each: no need for one OR statement
        anchor_ids = {anchor.id for anchor in anchors}
        found: dict[str, Chunk] = {}
        for anchor in anchors:
            low, high = anchor.ordinal - window, anchor.ordinal + window
            if anchor.parent_id is None:
                sql = (f"{_CHUNKS}document_id = ? AND parent_id IS NULL AND level = ? "
                       "AND ordinal BETWEEN ? AND ?")
                params: tuple[Any, ...] = (anchor.document_id, anchor.level, low, high)
            else:
                sql = f"{_CHUNKS}document_id = ? AND parent_id = ? AND ordinal BETWEEN ? AND ?"
                params = (anchor.document_id, anchor.parent_id, low, high)
            for values in self._rows(sql, params):
                if values[0] not in anchor_ids:
                    found[values[0]] = chunk_from_values(values)
        return sorted(found.values(),
                      key=lambda chunk: (chunk.document_id, chunk.level, chunk.ordinal, chunk.id))

    # versions (VersionReader) and FAQ counts

    def searchable_version(self, kb_id: str, pinned: int | None = None) -> int:
        rows = self._rows("SELECT active_seq FROM kb_version_state WHERE kb_id = ?", (kb_id,))
        active = 0 if not rows or rows[0][0] is None else int(rows[0][0])
        if pinned is None or pinned == active:
            return active
        # a pinned version: SqlRepository checks it is retained and names those that are
        return self._sql().searchable_version(kb_id, pinned)

    def get_chunks_at(self, kb_id: str, chunk_ids: Sequence[str], version_seq: int
                      ) -> list[tuple[Chunk, str]]:
        unique = list(dict.fromkeys(chunk_ids))
        chunks: dict[str, Chunk] = {}
        for part in _parts(unique):
            for values in self._rows(f"{_CHUNKS}id IN ({_marks(len(part))})", part):
                if valid_at(values[_VALID_FROM], values[_VALID_TO], version_seq):
                    chunks[values[0]] = chunk_from_values(values)
        document_ids = list({chunk.document_id for chunk in chunks.values()})
        filenames: dict[str, str] = {}
        for part in _parts(document_ids):
            filenames.update((row[0], row[1]) for row in self._rows(
                f"SELECT id, filename FROM documents WHERE kb_id = ? AND status IN "
                f"({_marks(len(SEARCHABLE))}) AND id IN ({_marks(len(part))})",
                (kb_id, *SEARCHABLE, *part)))
        return [(chunks[chunk_id], filenames[chunks[chunk_id].document_id])
                for chunk_id in chunk_ids
                if chunk_id in chunks and chunks[chunk_id].document_id in filenames]

    def count_faq_entries(self, kb_id: str, version_seq: int | None = None) -> int:
        if version_seq is None:
            rows = self._rows("SELECT count(*) FROM faq_entries WHERE kb_id = ? "
                              "AND valid_to_seq = 0", (kb_id,))
        else:
            rows = self._rows(
                "SELECT count(*) FROM faq_entries WHERE kb_id = ? AND valid_from_seq <= ? "
                "AND (valid_to_seq = 0 OR valid_to_seq > ?)", (kb_id, version_seq, version_seq))
        return int(rows[0][0] or 0)
