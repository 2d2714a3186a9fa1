"""Which process works on an unfinished document: set, taken over when its owner is dead."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import DocumentRow, document_from_row
from ragsift.domain.models import Document, DocumentStatus

UNFINISHED = (
    DocumentStatus.PENDING, DocumentStatus.PARSING, DocumentStatus.INDEXING,
    DocumentStatus.DELETING,
)


class OwnerRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def set_owner(self, document_id: str, owner: str | None) -> None:
        """Record the process now working on the document (None: nobody)."""
        with self._sessions.begin() as session:
            session.execute(
                update(DocumentRow).where(DocumentRow.id == document_id).values(owner=owner)
            )

    def document_owner(self, document_id: str) -> str | None:
        """The process recorded as working on the document, if any."""
        with self._sessions.begin() as session:
            return session.scalar(select(DocumentRow.owner).where(DocumentRow.id == document_id))

    def take_over(self, document_id: str, previous: str | None, owner: str) -> bool:
        """Become the owner of an unfinished document still owned by `previous`.

        One compare-and-set statement, so of two processes taking over the same abandoned
        document only one succeeds.
        """
        held = (DocumentRow.owner.is_(None) if previous is None
                else DocumentRow.owner == previous)
        with self._sessions.begin() as session:
            result = session.execute(
                update(DocumentRow)
                .where(DocumentRow.id == document_id, held,
                       DocumentRow.status.in_([s.value for s in UNFINISHED]))
                .values(owner=owner, updated_at=datetime.now(UTC))
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def unfinished_documents(self, kb_id: str | None = None) -> list[tuple[Document, str | None]]:
        """Documents in PENDING, PARSING, INDEXING or DELETING, with their owners; oldest first."""
        query = select(DocumentRow).where(DocumentRow.status.in_([s.value for s in UNFINISHED]))
        if kb_id is not None:
            query = query.where(DocumentRow.kb_id == kb_id)
        query = query.order_by(DocumentRow.created_at, DocumentRow.id)
        with self._sessions.begin() as session:
            return [(document_from_row(row), row.owner) for row in session.scalars(query)]
