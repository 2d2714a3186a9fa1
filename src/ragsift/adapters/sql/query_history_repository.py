"""The debug page's query history (query_history, 0017): the last N queries of each KB."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import KnowledgeBaseRow, QueryHistoryRow, to_utc
from ragsift.domain.errors import NotFound
from ragsift.domain.query_history import HistoryHit, QueryRecord


def _record(row: QueryHistoryRow) -> QueryRecord:
    return QueryRecord(
        id=row.id, kb_id=row.kb_id, query=row.query, options=dict(row.options),
        hits=tuple(HistoryHit(str(chunk_id), float(score)) for chunk_id, score in row.hits),
        latency_ms=row.latency_ms, key_name=row.key_name, created_at=to_utc(row.created_at))


class QueryHistoryRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def record_query(self, record: QueryRecord, keep: int) -> None:
        """Store `record` and drop the KB's queries beyond the newest `keep`; NotFound for no
        KB (deleted meanwhile)."""
        assert record.created_at is not None
        with self._sessions.begin() as session:
            if session.get(KnowledgeBaseRow, record.kb_id) is None:
                raise NotFound(f"knowledge base {record.kb_id!r} does not exist")
            session.add(QueryHistoryRow(
                id=record.id, kb_id=record.kb_id, query=record.query,
                options=dict(record.options),
                hits=[[hit.chunk_id, hit.score] for hit in record.hits],
                latency_ms=record.latency_ms, key_name=record.key_name,
                created_at=to_utc(record.created_at)))
            session.flush()
            older = select(QueryHistoryRow.id).where(QueryHistoryRow.kb_id == record.kb_id) \
                .order_by(QueryHistoryRow.created_at.desc(), QueryHistoryRow.id.desc()) \
                .offset(keep)
            stale = list(session.scalars(older))
            if stale:
                session.execute(delete(QueryHistoryRow).where(QueryHistoryRow.id.in_(stale)))

    def list_queries(self, kb_id: str, limit: int) -> tuple[list[QueryRecord], int]:
        """The KB's newest `limit` queries, newest first, and how many it keeps in all."""
        with self._sessions() as session:
            rows = session.scalars(
                select(QueryHistoryRow).where(QueryHistoryRow.kb_id == kb_id)
                .order_by(QueryHistoryRow.created_at.desc(), QueryHistoryRow.id.desc())
                .limit(limit))
            records = [_record(row) for row in rows]
            total = session.scalar(select(func.count()).select_from(QueryHistoryRow)
                                   .where(QueryHistoryRow.kb_id == kb_id))
        return records, int(total or 0)

    def clear_queries(self, kb_id: str) -> int:
        """Forget the KB's queries; how many there were."""
        with self._sessions.begin() as session:
            result = session.execute(
                delete(QueryHistoryRow).where(QueryHistoryRow.kb_id == kb_id))
        return int(getattr(result, "rowcount", 0) or 0)
