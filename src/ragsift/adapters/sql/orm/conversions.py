"""Rows to domain values and back, and values the database refuses turned into bad input."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Row,
    Select,
    select,
)
from sqlalchemy.exc import DataError

from ragsift.adapters.chunk_values import (
    CHUNK_VALUE_COLUMNS,
    chunk_from_values,
)
from ragsift.adapters.sql.orm.tables import (
    Base,
    ChunkRow,
    DocumentRow,
    FaqEntryRow,
    KnowledgeBaseRow,
)
from ragsift.domain.errors import InvalidInput
from ragsift.domain.faq import FaqEntry
from ragsift.domain.models import (
    Chunk,
    Document,
    DocumentScope,
    DocumentStatus,
    KnowledgeBase,
    Locator,
)


@contextmanager
def storable(what: str) -> Iterator[None]:
    """Turn a value the database refuses into InvalidInput naming `what` and the reason.

    PostgreSQL enforces what SQLite lets through: no NUL in text, VARCHAR lengths, 32-bit
    INTEGER. Such a value is bad input, not a server failure.
    """
    try:
        yield
    except DataError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise InvalidInput(f"{what} cannot be stored: {reason}") from exc


def storable_message(message: str | None) -> str | None:
    """`message` with NUL characters (which PostgreSQL text cannot hold) made visible."""
    return None if message is None else message.replace("\x00", "\ufffd")


def to_utc(value: datetime) -> datetime:
    """`value` as an aware UTC datetime."""
    # SQLite hands back naive datetimes; everything stored is UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def kb_from_row(row: KnowledgeBaseRow) -> KnowledgeBase:
    """The domain value of a knowledge base row."""
    return KnowledgeBase(
        id=row.id,
        name=row.name,
        embedding_model=row.embedding_model,
        embedding_dim=row.embedding_dim,
        analyzer=dict(row.analyzer),
        created_at=to_utc(row.created_at),
    )


# The document columns `document_from_row` reads, as a select whose Core rows are named like
# the attributes: the ingest pipeline's batch reads skip the ORM's identity map and
# per-object state with it (a claim 0.09 -> 0.077 ms per document, docs/benchmarks.md).
DOCUMENT_SELECT: Select[Any] = select(*(getattr(DocumentRow, name) for name in (
    "id", "kb_id", "filename", "media_type", "sha256", "size", "status", "error", "category",
    "source", "tenant_id", "dataset_id", "visibility", "allowed_roles", "meta", "created_at",
    "updated_at", "doc_key", "source_mtime", "replacing_owner", "warnings",
)))


def document_from_row(row: DocumentRow | Row[Any]) -> Document:
    """The domain value of a document row (an ORM row or a DOCUMENT_SELECT row)."""
    return Document(
        id=row.id,
        kb_id=row.kb_id,
        filename=row.filename,
        media_type=row.media_type,
        sha256=row.sha256,
        size=row.size,
        status=DocumentStatus(row.status),
        error=row.error,
        category=row.category,
        scope=DocumentScope(
            source=row.source,
            tenant_id=row.tenant_id,
            dataset_id=row.dataset_id,
            visibility=row.visibility,
            allowed_roles=tuple(row.allowed_roles or ()),
        ),
        metadata=dict(row.meta),
        created_at=to_utc(row.created_at),
        updated_at=to_utc(row.updated_at),
        key=row.doc_key,
        source_mtime=row.source_mtime,
        replacing=row.replacing_owner is not None,
        warnings=tuple(row.warnings or ()),
    )


def document_row(document: Document, created_at: datetime, updated_at: datetime) -> DocumentRow:
    """A new row holding `document` with the given timestamps."""
    return DocumentRow(**document_values(document, created_at, updated_at))


def document_values(
    document: Document, created_at: datetime, updated_at: datetime
) -> dict[str, Any]:
    """The column values (by attribute name) of a new row holding `document`."""
    return {
        "id": document.id,
        "kb_id": document.kb_id,
        "filename": document.filename,
        "media_type": document.media_type,
        "sha256": document.sha256,
        "size": document.size,
        "status": document.status.value,
        "error": document.error,
        "category": document.category,
        "source": document.scope.source,
        "tenant_id": document.scope.tenant_id,
        "dataset_id": document.scope.dataset_id,
        "visibility": document.scope.visibility,
        "allowed_roles": list(document.scope.allowed_roles) or None,
        "meta": dict(document.metadata),
        "created_at": created_at,
        "updated_at": updated_at,
        "doc_key": document.key,
        "source_mtime": document.source_mtime,
    }


def faq_from_row(row: FaqEntryRow) -> FaqEntry:
    """The domain value of a FAQ entry row."""
    return FaqEntry(
        id=row.id,
        kb_id=row.kb_id,
        question=row.question,
        answer=row.answer,
        source=row.source,
        tenant_id=row.tenant_id,
        dataset_id=row.dataset_id,
        visibility=row.visibility,
        allowed_roles=tuple(row.allowed_roles or ()),
        valid_from_seq=row.valid_from_seq,
        valid_to_seq=row.valid_to_seq,
        created_at=to_utc(row.created_at),
    )


_LOCATOR_FIELDS = tuple(Locator.model_fields)


# The Core table: bulk inserts and selects through it skip the ORM identity map.
CHUNK_TABLE = Base.metadata.tables[ChunkRow.__tablename__]


# The chunk columns and their conversion live in a module without SQLAlchemy: the read-only
# SQLite reader of a CLI search uses them too.
_chunk_values = operator.attrgetter(*CHUNK_VALUE_COLUMNS)


def chunk_from_row(row: Row[Any]) -> Chunk:
    """The domain value of a row selected from the chunks table."""
    return chunk_from_values(_chunk_values(row))


def locator_json(locator: Locator) -> dict[str, Any]:
    """Only the set fields of a locator, built by hand: model_dump costs more than an insert."""
    return {
        name: value for name in _LOCATOR_FIELDS
        if (value := getattr(locator, name)) is not None and value != ()
    }


def chunk_values(chunk: Chunk) -> dict[str, Any]:
    """The chunks-table column values of `chunk`, for a bulk insert."""
    return {
        "id": chunk.id,
        "document_id": chunk.document_id,
        "kb_id": chunk.kb_id,
        "parent_id": chunk.parent_id,
        "level": chunk.level,
        "ordinal": chunk.ordinal,
        "heading_path": list(chunk.heading_path),
        "locator": locator_json(chunk.locator),
        "text": chunk.text,
        "token_count": chunk.token_count,
        "asset_ids": list(chunk.asset_ids) or None,
        "valid_from_seq": chunk.valid_from_seq,
        "valid_to_seq": chunk.valid_to_seq,
    }
