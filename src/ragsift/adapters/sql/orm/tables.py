"""SQLAlchemy tables: knowledge bases, documents, chunks, assets, FAQ, jobs, conversations,
versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import false as sql_false
from sqlalchemy import text as sql_text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Deterministic constraint names, so SQLite and PostgreSQL agree and migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


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
        # the filtered search's stamp (count, latest updated_at) reads this index only (0018)
        Index("ix_documents_kb_id_updated_at", "kb_id", "updated_at"),
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


class LabelledSetRow(Base):
    """A labels JSONL saved under a name with its KB (0019), for the evaluation view."""

    __tablename__ = "labelled_sets"
    __table_args__ = (UniqueConstraint("kb_id", "name", name="uq_labelled_sets_kb_id_name"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    kb_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    labels: Mapped[str] = mapped_column(Text)
    queries: Mapped[int] = mapped_column(Integer)
    size_bytes: Mapped[int] = mapped_column(Integer)
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
