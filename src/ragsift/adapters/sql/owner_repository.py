"""Which process works on an unfinished document: set, taken over when its owner is dead."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import DocumentRow, document_from_row
from ragsift.domain.models import Document, DocumentStatus, Revision

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

    # ---- keys and replacements (0009) -------------------------------------------------

    def find_document_by_key(self, kb_id: str, key: str) -> Document | None:
        """The document of `kb_id` with this key, or None."""
        with self._sessions.begin() as session:
            row = session.scalars(select(DocumentRow).where(
                DocumentRow.kb_id == kb_id, DocumentRow.doc_key == key)).first()
            return None if row is None else document_from_row(row)

    def documents_by_key(self, kb_id: str) -> dict[str, Document]:
        """Every keyed document of `kb_id`, by key (what a folder sync compares against)."""
        with self._sessions.begin() as session:
            rows = session.scalars(select(DocumentRow).where(
                DocumentRow.kb_id == kb_id, DocumentRow.doc_key.is_not(None)))
            return {row.doc_key: document_from_row(row) for row in rows if row.doc_key}

    def claim_replace(self, document_id: str, stale: str | None, owner: str) -> bool:
        """Start replacing a READY or FAILED document's content: one statement, so of two
        concurrent replaces (or a replace and a reindex) only one proceeds. `stale` is the
        dead process whose unfinished replacement may be taken over (None: there is none)."""
        held = (DocumentRow.replacing_owner.is_(None) if stale is None
                else DocumentRow.replacing_owner == stale)
        with self._sessions.begin() as session:
            result = session.execute(
                update(DocumentRow)
                .where(DocumentRow.id == document_id, held,
                       DocumentRow.status.in_([DocumentStatus.READY.value,
                                               DocumentStatus.FAILED.value]))
                .values(replacing_owner=owner))
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def replacements(self, kb_id: str | None = None) -> list[tuple[str, str]]:
        """(document id, owner) of every replacement under way."""
        query = select(DocumentRow.id, DocumentRow.replacing_owner).where(
            DocumentRow.replacing_owner.is_not(None))
        if kb_id is not None:
            query = query.where(DocumentRow.kb_id == kb_id)
        with self._sessions.begin() as session:
            return [(str(i), str(o)) for i, o in session.execute(query)]

    def set_source_mtime(self, document_id: str, source_mtime: float) -> None:
        """A file with the same bytes was touched: remember its new mtime."""
        with self._sessions.begin() as session:
            session.execute(update(DocumentRow).where(DocumentRow.id == document_id)
                            .values(source_mtime=source_mtime))

    def replacing_owner(self, document_id: str) -> str | None:
        with self._sessions.begin() as session:
            return session.scalar(
                select(DocumentRow.replacing_owner).where(DocumentRow.id == document_id))

    def finish_replace(
        self, document_id: str, revision: Revision | None, error: str | None = None
    ) -> None:
        """End a replacement: record the new content's facts (when it was stored) or why it
        failed (the old content stays), and release the document."""
        values: dict[str, object] = {"replacing_owner": None, "error": error,
                                     "updated_at": datetime.now(UTC)}
        if revision is not None:
            values.update(sha256=revision.sha256, size=revision.size,
                          filename=revision.filename, source_mtime=revision.source_mtime,
                          media_type=revision.media_type)
        with self._sessions.begin() as session:
            session.execute(update(DocumentRow).where(DocumentRow.id == document_id)
                            .values(**values))
