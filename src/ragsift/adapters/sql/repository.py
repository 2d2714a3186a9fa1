"""The Repository port on SQLAlchemy: one short transaction per call, domain values in and out."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from sqlalchemy import bindparam, delete, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from ragsift.adapters.sql.asset_repository import AssetRepositoryMixin
from ragsift.adapters.sql.chunk_queries import (
    RANGES_PER_STATEMENT,
    ancestor_chunks,
    chunks_with_filenames,
    documents_in,
    neighbour_chunks,
    neighbour_ranges,
)
from ragsift.adapters.sql.faq_repository import FaqRepositoryMixin
from ragsift.adapters.sql.ingest_batches import IngestBatchMixin
from ragsift.adapters.sql.kb_settings_repository import KbSettingsRepositoryMixin
from ragsift.adapters.sql.key_repository import KeyRepositoryMixin
from ragsift.adapters.sql.labelled_set_repository import LabelledSetRepositoryMixin
from ragsift.adapters.sql.metadata_repository import MetadataRepositoryMixin
from ragsift.adapters.sql.migrate import upgrade_to_head
from ragsift.adapters.sql.orm import (
    CHUNK_TABLE,
    ChunkRow,
    DocumentRow,
    FaqEntryRow,
    KbActivationRow,
    KbFusionTuningRow,
    KbSettingsRow,
    KbVersionRow,
    KbVersionStateRow,
    KnowledgeBaseRow,
    chunk_from_row,
    chunk_values,
    document_from_row,
    document_row,
    kb_from_row,
    make_engine,
    storable,
    storable_message,
    to_utc,
)
from ragsift.adapters.sql.owner_repository import OwnerRepositoryMixin
from ragsift.adapters.sql.query_history_repository import QueryHistoryRepositoryMixin
from ragsift.adapters.sql.tuning_repository import TuningRepositoryMixin
from ragsift.adapters.sql.version_repository import VersionRepositoryMixin
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase

logger = logging.getLogger(__name__)

_KB_BY_ID = select(KnowledgeBaseRow.__table__).where(
    KnowledgeBaseRow.__table__.c.id == bindparam("kb_id"))

# SQLite allows 999 bound variables in old builds; 500 per IN list stays well under it.
IN_BATCH = 500

_T = TypeVar("_T")


def _batches(items: Sequence[_T], size: int = IN_BATCH) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _now() -> datetime:
    return datetime.now(UTC)


class SqlRepository(
    # first: its settings_snapshot stands for VersionCommitMixin's stub
    KbSettingsRepositoryMixin, AssetRepositoryMixin, FaqRepositoryMixin, TuningRepositoryMixin,
    VersionRepositoryMixin,
    OwnerRepositoryMixin, KeyRepositoryMixin, IngestBatchMixin, MetadataRepositoryMixin,
    QueryHistoryRepositoryMixin, LabelledSetRepositoryMixin,
):
    """Knowledge bases, documents, chunks and FAQ entries in SQLite or PostgreSQL; thread-safe."""

    def __init__(self, url: str) -> None:
        self._engine = make_engine(url)
        # A fresh data directory just works: the schema is created or upgraded here.
        upgrade_to_head(url, self._engine)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        self._probe = False  # MetadataRepositoryMixin.filter_stamp's, opened on first use
        self._filter_stamps = {}
        self.kb_setting_defaults = {}

    def close(self) -> None:
        """Release every pooled connection."""
        self.close_change_probe()
        self._engine.dispose()

    def ping(self) -> None:
        """Raise unless the database answers a trivial query."""
        with self._sessions.begin() as session:
            session.execute(text("SELECT 1"))

    # knowledge bases

    def create_kb(self, kb: KnowledgeBase) -> KnowledgeBase:
        """Store a new knowledge base; its name must be unused."""
        # SQLite drops the offset when storing, so only UTC goes in.
        created_at = to_utc(kb.created_at) if kb.created_at else _now()
        try:
            with storable(f"knowledge base {kb.name!r}"), self._sessions.begin() as session:
                session.add(
                    KnowledgeBaseRow(
                        id=kb.id,
                        name=kb.name,
                        embedding_model=kb.embedding_model,
                        embedding_dim=kb.embedding_dim,
                        analyzer=dict(kb.analyzer),
                        created_at=created_at,
                    )
                )
        except IntegrityError as exc:
            if self.get_kb_by_name(kb.name) is not None:
                raise InvalidInput(f"a knowledge base named {kb.name!r} already exists") from exc
            raise InvalidInput(f"a knowledge base with id {kb.id!r} already exists") from exc
        return kb.model_copy(update={"created_at": created_at})

    def get_kb(self, kb_id: str) -> KnowledgeBase | None:
        """The knowledge base with this id, or None."""
        # a plain select on a Core connection: every search reads its KB, and the ORM
        # session and identity map around one primary-key read cost most of the call
        with self._engine.connect() as connection:
            row = connection.execute(_KB_BY_ID, {"kb_id": kb_id}).first()
            return None if row is None else kb_from_row(row)  # type: ignore[arg-type]

    def get_kb_by_name(self, name: str) -> KnowledgeBase | None:
        """The knowledge base with this name, or None."""
        with self._sessions.begin() as session:
            row = session.scalars(
                select(KnowledgeBaseRow).where(KnowledgeBaseRow.name == name)
            ).first()
            return None if row is None else kb_from_row(row)

    def list_kbs(self) -> list[KnowledgeBase]:
        """Every knowledge base, by name."""
        with self._sessions.begin() as session:
            rows = session.scalars(select(KnowledgeBaseRow).order_by(KnowledgeBaseRow.name))
            return [kb_from_row(row) for row in rows]

    def delete_kb(self, kb_id: str) -> None:
        """Remove a knowledge base with its documents, chunks and FAQ; unknown ids are a no-op."""
        documents = select(DocumentRow.id).where(DocumentRow.kb_id == kb_id)
        with self._sessions.begin() as session:
            # Explicit deletes, not only ON DELETE CASCADE: correct even where FKs are off.
            session.execute(delete(ChunkRow).where(ChunkRow.document_id.in_(documents)))
            session.execute(delete(DocumentRow).where(DocumentRow.kb_id == kb_id))
            session.execute(delete(FaqEntryRow).where(FaqEntryRow.kb_id == kb_id))
            session.execute(delete(KbFusionTuningRow).where(KbFusionTuningRow.kb_id == kb_id))
            session.execute(delete(KbSettingsRow).where(KbSettingsRow.kb_id == kb_id))
            for version_table in (KbActivationRow, KbVersionRow, KbVersionStateRow):
                session.execute(delete(version_table).where(version_table.kb_id == kb_id))
            session.execute(delete(KnowledgeBaseRow).where(KnowledgeBaseRow.id == kb_id))

    # documents

    def add_document(self, document: Document, owner: str | None = None) -> Document:
        """Store a new document; its key must be new to its knowledge base.

        `owner`: the process that will work on it (see ragsift.processes).
        """
        now = _now()
        created_at = to_utc(document.created_at) if document.created_at else now
        row = document_row(document, created_at, now)
        row.owner = owner
        try:
            with storable(f"document {document.id!r}"), self._sessions.begin() as session:
                session.add(row)
        except IntegrityError as exc:
            raise self._explain_document_conflict(document) from exc
        return document.model_copy(update={"created_at": created_at, "updated_at": now})

    def _explain_document_conflict(self, document: Document) -> InvalidInput:
        if self.get_kb(document.kb_id) is None:
            return NotFound(f"knowledge base {document.kb_id!r} does not exist")
        if document.key is not None:
            existing = self.find_document_by_key(document.kb_id, document.key)
            if existing is not None:
                return InvalidInput(
                    f"knowledge base {document.kb_id!r} already holds the key "
                    f"{document.key!r} as document {existing.id!r}"
                )
        return InvalidInput(f"a document with id {document.id!r} already exists")

    def get_document(self, document_id: str) -> Document | None:
        """The document with this id, or None."""
        with self._sessions.begin() as session:
            row = session.get(DocumentRow, document_id)
            return None if row is None else document_from_row(row)

    def find_document_by_sha256(self, kb_id: str, sha256: str) -> Document | None:
        """The document of `kb_id` whose content hash is `sha256`, or None."""
        with self._sessions.begin() as session:
            row = session.scalars(
                select(DocumentRow).where(DocumentRow.kb_id == kb_id, DocumentRow.sha256 == sha256)
            ).first()
            return None if row is None else document_from_row(row)

    def list_documents(self, kb_id: str, status: DocumentStatus | None = None) -> list[Document]:
        """Documents of `kb_id`, oldest first, optionally only those in `status`."""
        query = select(DocumentRow).where(DocumentRow.kb_id == kb_id)
        if status is not None:
            query = query.where(DocumentRow.status == status.value)
        query = query.order_by(DocumentRow.created_at, DocumentRow.id)
        with self._sessions.begin() as session:
            return [document_from_row(row) for row in session.scalars(query)]

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None
    ) -> None:
        """Move a document to `status`; `error` replaces the stored error (None clears it)."""
        # Any error text is storable: a failing document must always reach FAILED.
        error = storable_message(error)
        with self._sessions.begin() as session:
            result = session.execute(
                update(DocumentRow)
                .where(DocumentRow.id == document_id)
                .values(status=status.value, error=error, updated_at=_now())
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NotFound(f"document {document_id!r} does not exist")

    def delete_document(self, document_id: str) -> None:
        """Remove a document and its chunks; unknown ids are a no-op."""
        with self._sessions.begin() as session:
            session.execute(delete(ChunkRow).where(ChunkRow.document_id == document_id))
            session.execute(delete(DocumentRow).where(DocumentRow.id == document_id))

    def ready_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that is READY in `kb_id` right now."""
        with self._engine.connect() as connection:
            return documents_in(connection, kb_id, document_ids, (DocumentStatus.READY.value,))

    # chunks

    def replace_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None:
        """Swap every chunk of a document for `chunks`, atomically."""
        strays = {chunk.document_id for chunk in chunks} - {document_id}
        if strays:
            raise InvalidInput(
                f"replace_chunks({document_id!r}) got chunks of other documents: {sorted(strays)}"
            )
        values = [chunk_values(chunk) for chunk in chunks]
        try:
            with (
                storable(f"chunks of document {document_id!r}"),
                self._sessions.begin() as session,
            ):
                session.execute(delete(ChunkRow).where(ChunkRow.document_id == document_id))
                if values:
                    # One Core executemany, not ORM objects: documents reach 100k chunks,
                    # and the Core insert is ~40% faster than even the ORM bulk insert.
                    session.execute(insert(CHUNK_TABLE), values)
        except IntegrityError as exc:
            if self.get_document(document_id) is None:
                raise NotFound(f"document {document_id!r} does not exist") from exc
            raise InvalidInput(f"duplicate chunk ids for document {document_id!r}") from exc
        logger.debug("stored %d chunks for document %s", len(values), document_id)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order given; unknown ids are skipped."""
        unique = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        with self._sessions.begin() as session:
            for batch in _batches(unique):
                query = select(CHUNK_TABLE).where(CHUNK_TABLE.c.id.in_(batch))
                for row in session.execute(query):
                    found[row.id] = chunk_from_row(row)
        return [found[chunk_id] for chunk_id in chunk_ids if chunk_id in found]

    def get_ready_chunks(
        self, kb_id: str, chunk_ids: Sequence[str]
    ) -> list[tuple[Chunk, str]]:
        """(chunk, filename) for the chunks whose document is READY in `kb_id`, in order."""
        with self._engine.connect() as connection:
            return chunks_with_filenames(
                connection, kb_id, chunk_ids, (DocumentStatus.READY.value,)
            )

    def list_chunks(self, document_id: str) -> list[Chunk]:
        """Every chunk of a document, parents first, each level in reading order."""
        query = (
            select(CHUNK_TABLE)
            .where(CHUNK_TABLE.c.document_id == document_id)
            .order_by(CHUNK_TABLE.c.level, CHUNK_TABLE.c.ordinal, CHUNK_TABLE.c.id)
        )
        with self._sessions.begin() as session:
            return [chunk_from_row(row) for row in session.execute(query)]

    def get_neighbours(self, anchors: Sequence[Chunk], window: int) -> list[Chunk]:
        """Chunks within `window` ordinals of each anchor, same document, level and parent.

        One statement for up to RANGES_PER_STATEMENT anchors (more than the largest top_k),
        whatever their number. Anchors are left out; ordered by document, level, ordinal.
        """
        if window < 0:
            raise ValueError("window must be >= 0")
        ranges = neighbour_ranges(anchors, window)
        anchor_ids = {anchor.id for anchor in anchors}
        found: dict[str, Chunk] = {}
        with self._engine.connect() as connection:  # plain selects: no ORM session needed
            for batch in _batches(ranges, RANGES_PER_STATEMENT):
                for chunk in neighbour_chunks(connection, batch):
                    if chunk.id not in anchor_ids:
                        found[chunk.id] = chunk
        return sorted(found.values(), key=_reading_order)

    def get_ancestors(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Every ancestor (parent, its parent, ...) of these chunks; ordered by document, level.

        One recursive statement per IN_BATCH ids, whatever the depth.
        """
        unique = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        with self._engine.connect() as connection:
            for batch in _batches(unique):
                for chunk in ancestor_chunks(connection, batch):
                    found[chunk.id] = chunk
        return sorted(found.values(), key=_reading_order)

    def set_status_if(
        self, document_id: str, expected: Iterable[DocumentStatus], status: DocumentStatus
    ) -> bool:
        """Move a document to `status` (clearing its error) only while it is in `expected`.

        One conditional UPDATE, so the check and the change are a single step: of concurrent
        callers, exactly one sees True. False when the document is in another status or gone.
        """
        allowed = [s.value for s in expected]
        with self._sessions.begin() as session:
            result = session.execute(
                update(DocumentRow)
                .where(DocumentRow.id == document_id, DocumentRow.status.in_(allowed))
                .values(status=status.value, error=None, updated_at=_now())
            )
            changed: int = result.rowcount  # type: ignore[attr-defined]
        return changed == 1


def _reading_order(chunk: Chunk) -> tuple[str, int, int, str]:
    return chunk.document_id, chunk.level, chunk.ordinal, chunk.id
