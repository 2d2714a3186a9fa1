"""The ingest pipeline's reads and status changes for many documents in one statement each.

A one-line document cost about 13 queries and 11 commits, more CPU than parsing and writing
it (docs/benchmarks.md); these let the pipeline take a batch of documents through each step
in one transaction. Mixed into SqlRepository, which sets `_sessions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import (
    CHUNK_TABLE,
    DOCUMENT_SELECT,
    DocumentRow,
    chunk_from_row,
    document_from_row,
    document_values,
    storable,
    to_utc,
)
from ragsift.adapters.sql.version_commits import batches
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import Chunk, Document, DocumentStatus


class IngestBatchMixin:
    """Batched document reads, status moves and chunk listings for ingestion."""

    _sessions: sessionmaker[Session]

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """The documents that exist among `document_ids`, by id."""
        unique = list(dict.fromkeys(document_ids))
        with self._sessions.begin() as session:
            return _documents(session, unique)

    def claim_documents(
        self, document_ids: Sequence[str], owner: str, status: DocumentStatus
    ) -> dict[str, Document]:
        """Become the owner of these documents and move them to `status`, in one transaction.

        Returns the documents as they were before the move, by id (missing ones left out):
        what a caller planning their processing needs (a first ingest is PENDING).
        """
        unique = list(dict.fromkeys(document_ids))
        with self._sessions.begin() as session:
            found = _documents(session, unique)
            for batch in batches(list(found)):
                session.execute(
                    update(DocumentRow).where(DocumentRow.id.in_(batch))
                    .values(owner=owner, status=status.value, error=None,
                            updated_at=datetime.now(UTC))
                )
            return found

    def set_statuses(self, document_ids: Sequence[str], status: DocumentStatus) -> None:
        """set_status() of each of `document_ids` (errors cleared), in one transaction."""
        unique = list(dict.fromkeys(document_ids))
        with self._sessions.begin() as session:
            for batch in batches(unique):
                session.execute(
                    update(DocumentRow).where(DocumentRow.id.in_(batch))
                    .values(status=status.value, error=None, updated_at=datetime.now(UTC))
                )

    def list_chunks_of(self, document_ids: Sequence[str]) -> dict[str, list[Chunk]]:
        """list_chunks() of each document (every id a key, [] when it has none)."""
        unique = list(dict.fromkeys(document_ids))
        found: dict[str, list[Chunk]] = {document_id: [] for document_id in unique}
        table = CHUNK_TABLE.c
        with self._sessions.begin() as session:
            for batch in batches(unique):
                query = (select(CHUNK_TABLE).where(table.document_id.in_(batch))
                         .order_by(table.document_id, table.level, table.ordinal, table.id))
                for row in session.execute(query):
                    found[row.document_id].append(chunk_from_row(row))
        return found

    def find_document_by_key_or_sha256(
        self, kb_id: str, key: str, sha256: str
    ) -> tuple[Document | None, list[Document]]:
        """(the document of `kb_id` with this key, those with this content hash, oldest
        first: one per access scope or more): one query."""
        query = DOCUMENT_SELECT.where(
            DocumentRow.kb_id == kb_id,
            or_(DocumentRow.doc_key == key, DocumentRow.sha256 == sha256),
        ).order_by(DocumentRow.created_at, DocumentRow.id)
        keyed: Document | None = None
        hashed: list[Document] = []
        with self._sessions.begin() as session:
            for row in session.execute(query):
                document = document_from_row(row)
                if row.doc_key == key:
                    keyed = document
                if row.sha256 == sha256:
                    hashed.append(document)
        return keyed, hashed

    def add_documents(self, documents: Sequence[Document], owner: str | None = None
                      ) -> list[Document]:
        """add_document() of several new documents in one transaction: all or none.

        InvalidInput when one of them clashes with a stored document (its key is taken in
        its KB) or its KB is gone.
        """
        now = datetime.now(UTC)
        rows, added = [], []
        for document in documents:
            created_at = to_utc(document.created_at) if document.created_at else now
            rows.append(document_values(document, created_at, now) | {"owner": owner})
            added.append(document.model_copy(update={"created_at": created_at,
                                                     "updated_at": now}))
        if not rows:
            return added
        try:
            # one executemany of plain values: ORM objects (add_all) cost more than the insert
            with storable(f"{len(rows)} documents"), self._sessions.begin() as session:
                session.execute(insert(DocumentRow), rows)
        except IntegrityError as exc:
            raise InvalidInput(f"{len(rows)} new documents clash with stored ones "
                               "(key or knowledge base)") from exc
        return added

    def documents_by_keys_or_sha256(
        self, kb_id: str, keys: Sequence[str], shas: Sequence[str]
    ) -> tuple[set[str], set[str]]:
        """(the keys, the content hashes) of `kb_id`'s documents among these: taken ones."""
        taken_keys: set[str] = set()
        taken_shas: set[str] = set()
        with self._sessions.begin() as session:
            for batch in batches(list(dict.fromkeys(keys))):
                taken_keys.update(k for k in session.scalars(select(DocumentRow.doc_key).where(
                    DocumentRow.kb_id == kb_id, DocumentRow.doc_key.in_(batch))) if k)
            for batch in batches(list(dict.fromkeys(shas))):
                taken_shas.update(h for h in session.scalars(select(DocumentRow.sha256).where(
                    DocumentRow.kb_id == kb_id, DocumentRow.sha256.in_(batch))) if h)
        return taken_keys, taken_shas


def _documents(session: Session, document_ids: Sequence[str]) -> dict[str, Document]:
    found: dict[str, Document] = {}
    for batch in batches(document_ids):
        for row in session.execute(DOCUMENT_SELECT.where(DocumentRow.id.in_(batch))):
            found[row.id] = document_from_row(row)
    return found
