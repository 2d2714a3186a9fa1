"""SQLAlchemy tables (knowledge bases, documents, chunks, FAQ entries), conversions, the engine."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Row,
    Select,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    select,
)
from sqlalchemy import false as sql_false
from sqlalchemy import text as sql_text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DataError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.pool import StaticPool

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
from ragsift.domain.trusted import TrustedBuilder

# Deterministic constraint names, so SQLite and PostgreSQL agree and migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SQLITE_BUSY_TIMEOUT_MS = 5000

ID = String(64)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class KnowledgeBaseRow(Base):
    __tablename__ = "knowledge_bases"
    __table_args__ = (UniqueConstraint("name", name="uq_knowledge_bases_name"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    embedding_model: Mapped[str] = mapped_column(String(255))
    embedding_dim: Mapped[int] = mapped_column(Integer)
    analyzer: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class DocumentRow(Base):
    __tablename__ = "documents"
    __table_args__ = (
        # not unique: the same bytes may be documents of several access scopes (0013)
        Index("ix_documents_kb_id_sha256", "kb_id", "sha256"),
        # NULL keys (documents from before 0009) never collide, as with sha256
        Index("uq_documents_kb_id_doc_key", "kb_id", "doc_key", unique=True),
        Index("ix_documents_kb_id_status", "kb_id", "status"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    filename: Mapped[str] = mapped_column(Text)
    media_type: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str | None] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)
    tenant_id: Mapped[str | None] = mapped_column(Text)
    dataset_id: Mapped[str | None] = mapped_column(Text)
    visibility: Mapped[str | None] = mapped_column(Text)
    # Roles that may see the document's chunks; NULL = no role restriction (0005).
    allowed_roles: Mapped[list[str] | None] = mapped_column(JSON)
    # `metadata` is reserved on declarative classes, so the attribute is `meta`.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The process working on an unfinished document (0007; ragsift.processes).
    owner: Mapped[str | None] = mapped_column(String(512))
    # Its key in the KB, the source's mtime, and the process replacing its content (0009).
    doc_key: Mapped[str | None] = mapped_column(String(1024))
    source_mtime: Mapped[float | None] = mapped_column(Float)
    replacing_owner: Mapped[str | None] = mapped_column(String(512))
    # What parsing skipped or cut without failing the document (0011).
    warnings: Mapped[list[str] | None] = mapped_column(JSON)


class ChunkRow(Base):
    __tablename__ = "chunks"
    __table_args__ = (
        Index("ix_chunks_document_id", "document_id"),
        Index("ix_chunks_document_id_parent_id_ordinal", "document_id", "parent_id", "ordinal"),
        # garbage collection and version diffs look up a KB's retired chunks
        Index("ix_chunks_kb_id_valid_to_seq", "kb_id", "valid_to_seq"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    document_id: Mapped[str] = mapped_column(ID, ForeignKey("documents.id", ondelete="CASCADE"))
    kb_id: Mapped[str] = mapped_column(ID)
    # No FK to chunks.id: parents and children are bulk-inserted together in any order.
    parent_id: Mapped[str | None] = mapped_column(ID)
    level: Mapped[int] = mapped_column(Integer)
    ordinal: Mapped[int] = mapped_column(Integer)
    heading_path: Mapped[list[str]] = mapped_column(JSON)
    locator: Mapped[dict[str, Any]] = mapped_column(JSON)
    text: Mapped[str] = mapped_column(Text)
    token_count: Mapped[int] = mapped_column(Integer)
    # The KB versions the chunk belongs to (0005): valid_from_seq <= v < valid_to_seq, where
    # valid_to_seq 0 = still valid. Rows from before versions are 0/0: in every version.
    valid_from_seq: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))
    valid_to_seq: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))
    # The assets (images) the chunk belongs with, NULL for none (0011).
    asset_ids: Mapped[list[str] | None] = mapped_column(JSON)


class AssetRow(Base):
    """An image of a document (0011); its bytes are in the object store by sha256."""

    __tablename__ = "assets"
    __table_args__ = (
        Index("ix_assets_document_id", "document_id"),
        Index("ix_assets_kb_id_sha256", "kb_id", "sha256"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(ID)
    document_id: Mapped[str] = mapped_column(ID, ForeignKey("documents.id", ondelete="CASCADE"))
    sha256: Mapped[str] = mapped_column(String(64))
    media_type: Mapped[str] = mapped_column(String(255))
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    locator: Mapped[dict[str, Any]] = mapped_column(JSON)
    caption: Mapped[str] = mapped_column(Text)
    ocr_text: Mapped[str] = mapped_column(Text)


class FaqEntryRow(Base):
    __tablename__ = "faq_entries"
    # kb_id leads the index, so listing a KB's entries uses it. Not unique since 0010: a
    # retired row (kept for older versions) and a live one may share a key; writers hold
    # the KB's version state row lock and keep one live row per key.
    __table_args__ = (Index("ix_faq_entries_kb_id_sha256", "kb_id", "sha256"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)
    # content key: question, answer and access scope (domain/faq.py faq_key)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # data scope and KB-version window, as for documents and chunks (0010)
    tenant_id: Mapped[str | None] = mapped_column(Text)
    dataset_id: Mapped[str | None] = mapped_column(Text)
    visibility: Mapped[str | None] = mapped_column(Text)
    allowed_roles: Mapped[list[str] | None] = mapped_column(JSON)
    valid_from_seq: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))
    valid_to_seq: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))


class KbFusionTuningRow(Base):
    """The fusion settings `ragsift tune` fitted to a KB (one row per KB; JSON of TunedFusion)."""

    __tablename__ = "kb_fusion_tuning"

    kb_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    tuned: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class KbSettingsRow(Base):
    """A KB's own settings (ragsift/kb_settings.py): its overrides of the process settings,
    and the chunking its documents were last built with (0015)."""

    __tablename__ = "kb_settings"

    kb_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    overrides: Mapped[dict[str, Any]] = mapped_column(JSON)
    # the effective ingestion settings at the last full build (NULL: never recorded)
    built: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class QueryHistoryRow(Base):
    """A query run on the debug page (0017): the last RAGSIFT_QUERY_HISTORY_LIMIT per KB."""

    __tablename__ = "query_history"
    __table_args__ = (Index("ix_query_history_kb_id_created_at", "kb_id", "created_at"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    query: Mapped[str] = mapped_column(Text)
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    # [[chunk_id, score], ...] in rank order
    hits: Mapped[list[Any]] = mapped_column(JSON)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    key_name: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class IngestJobRow(Base):
    """The latest ingestion job of a document, leased by worker processes (job_queue.py)."""

    __tablename__ = "ingest_jobs"
    __table_args__ = (
        # One job row per document: enqueueing again re-arms a finished row.
        UniqueConstraint("document_id", name="uq_ingest_jobs_document_id"),
        Index("ix_ingest_jobs_status_created_at", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    document_id: Mapped[str] = mapped_column(ID, ForeignKey("documents.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    max_attempts: Mapped[int] = mapped_column(Integer)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ConversationRow(Base):
    """A chat conversation over one knowledge base (adapters/sql/conversation_repository.py)."""

    __tablename__ = "conversations"
    __table_args__ = (
        Index("ix_conversations_updated_at", "updated_at"),
        Index("ix_conversations_kb_id", "kb_id"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # the API key that created it (0008): only that key reads or deletes it
    owner_key: Mapped[str | None] = mapped_column(String(100))


class ConversationTurnRow(Base):
    """One chat turn: question, answer, citations, the evidence snapshot and the trace (JSON)."""

    __tablename__ = "conversation_turns"
    __table_args__ = (
        UniqueConstraint(
            "conversation_id", "position", name="uq_conversation_turns_conversation_id_position"
        ),
        # finding turns a stopped process left generating, without reading the JSON columns
        Index("ix_conversation_turns_status", "status"),
        Index("ix_conversation_turns_feedback_at", "feedback_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ID, ForeignKey("conversations.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(Integer)
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    citations: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    evidence: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # the images the answer shows (AssetRefs), NULL for none (0012)
    assets: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    trace: Mapped[dict[str, Any]] = mapped_column(JSON)
    extractive: Mapped[bool] = mapped_column(Boolean)
    model: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # regenerated versions and a user's feedback (0014, domain/chat.py Turn)
    version_of: Mapped[str | None] = mapped_column(ID)
    version: Mapped[int] = mapped_column(Integer, server_default="1", default=1)
    superseded: Mapped[bool] = mapped_column(Boolean, server_default=sql_false(), default=False)
    feedback: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    feedback_rating: Mapped[str | None] = mapped_column(String(8))
    feedback_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class KbVersionStateRow(Base):
    """Where a KB's versions stand: active and draft seq, publish mode, retention, gate (0005)."""

    __tablename__ = "kb_version_state"

    kb_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    active_seq: Mapped[int] = mapped_column(Integer)
    draft_seq: Mapped[int] = mapped_column(Integer)
    draft_changes: Mapped[int] = mapped_column(Integer)
    mode: Mapped[str] = mapped_column(String(16))
    retention: Mapped[int] = mapped_column(Integer)
    gate: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class KbVersionRow(Base):
    """A sealed, retained version of a KB with its chunk counts (0005)."""

    __tablename__ = "kb_versions"

    kb_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    note: Mapped[str | None] = mapped_column(Text)
    chunks: Mapped[int] = mapped_column(Integer)
    added: Mapped[int] = mapped_column(Integer)
    retired: Mapped[int] = mapped_column(Integer)
    # the KB's effective settings when this version was sealed (0015; NULL before)
    settings: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # document id -> its metadata when sealed, for documents with any (0016; NULL before)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON, nullable=True)


class KbActivationRow(Base):
    """One switch of a KB's active version: who from, to, forced, and the gate report (0005)."""

    __tablename__ = "kb_activations"
    __table_args__ = (Index("ix_kb_activations_kb_id_created_at", "kb_id", "created_at"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(16))
    from_seq: Mapped[int] = mapped_column(Integer)
    to_seq: Mapped[int] = mapped_column(Integer)
    forced: Mapped[bool] = mapped_column(Boolean)
    gate: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


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


_chunk = TrustedBuilder(Chunk)


def _json(value: Any) -> Any:
    """A JSON column's value: decoded already (the JSON type; PostgreSQL drivers) or text."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value
_locator = TrustedBuilder(Locator)


# The chunk columns in the order chunk_from_values unpacks them; the driver-level reads of
# chunk_queries list exactly these, so the table's own column order does not matter.
CHUNK_VALUE_COLUMNS = (
    "id", "document_id", "kb_id", "parent_id", "level", "ordinal", "heading_path", "locator",
    "text", "token_count", "valid_from_seq", "valid_to_seq", "asset_ids",
)
_chunk_values = operator.attrgetter(*CHUNK_VALUE_COLUMNS)


def chunk_from_row(row: Row[Any]) -> Chunk:
    """The domain value of a row selected from the chunks table."""
    return chunk_from_values(_chunk_values(row))


def chunk_from_values(values: Sequence[Any]) -> Chunk:
    """The domain value of a plain row of CHUNK_VALUE_COLUMNS (a driver's tuple)."""
    # unvalidated: these values were validated on the way in, and retrieval reads chunks on
    # every query, so validating again (or model_construct's default lookups) is overhead
    (id_, document_id, kb_id, parent_id, level, ordinal, heading_path, locator, text_,
     token_count, valid_from_seq, valid_to_seq, asset_ids) = values
    return _chunk({
        "id": id_,
        "document_id": document_id,
        "kb_id": kb_id,
        "parent_id": parent_id,
        "level": level,
        "ordinal": ordinal,
        "heading_path": tuple(_json(heading_path)),
        "locator": locator_from_json(_json(locator)),
        "text": text_,
        "token_count": token_count,
        "asset_ids": tuple(_json(asset_ids) or ()),
        "valid_from_seq": valid_from_seq,
        "valid_to_seq": valid_to_seq,
    })


def locator_from_json(values: dict[str, Any]) -> Locator:
    """A stored locator (JSON: boxes come back as lists) as the domain value, unvalidated."""
    boxes = values.get("boxes")
    if boxes:
        values = {**values, "boxes": tuple(tuple(box) for box in boxes)}
    return _locator(values)


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


def _is_sqlite_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets foreign keys, WAL and a busy timeout on every connection."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if _is_sqlite_memory(url):
        # One shared connection, otherwise every pooled connection sees its own empty database.
        engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            # WAL lets readers run while a writer commits; a no-op for in-memory databases.
            cursor.execute("PRAGMA journal_mode=WAL")
            # NORMAL is crash-safe under WAL; only a power loss can drop the last commits.
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    return engine
