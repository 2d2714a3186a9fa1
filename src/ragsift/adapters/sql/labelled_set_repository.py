"""Labelled query sets saved with a knowledge base (labelled_sets, 0019)."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import KnowledgeBaseRow, LabelledSetRow, to_utc
from ragsift.domain.errors import NotFound
from ragsift.domain.labelled_sets import LabelledSet, LabelledSetExists, TooManyLabelledSets


def _labelled_set(row: LabelledSetRow, with_labels: bool = True) -> LabelledSet:
    return LabelledSet(
        id=row.id, kb_id=row.kb_id, name=row.name, labels=row.labels if with_labels else "",
        queries=row.queries, size_bytes=row.size_bytes, key_name=row.key_name,
        created_at=to_utc(row.created_at))


class LabelledSetRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def save_labelled_set(self, entry: LabelledSet, max_sets: int) -> None:
        """Store `entry`; NotFound for no KB, LabelledSetExists for a name the KB uses,
        TooManyLabelledSets when the KB holds `max_sets` already."""
        assert entry.created_at is not None
        with self._sessions.begin() as session:
            if session.get(KnowledgeBaseRow, entry.kb_id) is None:
                raise NotFound(f"knowledge base {entry.kb_id!r} does not exist")
            where = LabelledSetRow.kb_id == entry.kb_id
            if session.scalar(select(LabelledSetRow.id).where(
                    where, LabelledSetRow.name == entry.name)) is not None:
                raise LabelledSetExists(
                    f"the knowledge base has a labelled set named {entry.name!r} already; "
                    "delete it first or choose another name")
            held = int(session.scalar(select(func.count()).select_from(LabelledSetRow)
                                      .where(where)) or 0)
            if held >= max_sets:
                raise TooManyLabelledSets(
                    f"the knowledge base holds {held} labelled sets, the most it may keep "
                    f"(RAGSIFT_WEB_EVAL_MAX_SETS={max_sets}); delete one first")
            session.add(LabelledSetRow(
                id=entry.id, kb_id=entry.kb_id, name=entry.name, labels=entry.labels,
                queries=entry.queries, size_bytes=entry.size_bytes, key_name=entry.key_name,
                created_at=to_utc(entry.created_at)))

    def list_labelled_sets(self, kb_id: str) -> list[LabelledSet]:
        """The KB's sets by name, without their labels text."""
        with self._sessions() as session:
            rows = session.scalars(select(LabelledSetRow).where(LabelledSetRow.kb_id == kb_id)
                                   .order_by(LabelledSetRow.name))
            return [_labelled_set(row, with_labels=False) for row in rows]

    def get_labelled_set(self, kb_id: str, set_id: str) -> LabelledSet:
        """One set of the KB, with its labels; NotFound for none (or another KB's)."""
        with self._sessions() as session:
            row = session.get(LabelledSetRow, set_id)
            if row is None or row.kb_id != kb_id:
                raise NotFound(f"labelled set {set_id!r} does not exist in this knowledge base")
            return _labelled_set(row)

    def delete_labelled_set(self, kb_id: str, set_id: str) -> None:
        """Forget one set of the KB; NotFound for none (or another KB's)."""
        with self._sessions.begin() as session:
            result = session.execute(delete(LabelledSetRow).where(
                LabelledSetRow.id == set_id, LabelledSetRow.kb_id == kb_id))
            if not getattr(result, "rowcount", 0):
                raise NotFound(f"labelled set {set_id!r} does not exist in this knowledge base")
