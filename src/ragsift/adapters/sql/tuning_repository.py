"""Fusion settings fitted per knowledge base: stored with the KB, read when a request opts in."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import KbFusionTuningRow, KnowledgeBaseRow
from ragsift.domain.errors import NotFound
from ragsift.domain.tuning import TunedFusion


class TuningRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def save_tuned_fusion(self, tuned: TunedFusion) -> None:
        """Store (or replace) the fitted fusion of `tuned.kb_id`; NotFound for an unknown KB."""
        with self._sessions.begin() as session:
            if session.get(KnowledgeBaseRow, tuned.kb_id) is None:
                raise NotFound(f"knowledge base {tuned.kb_id!r} does not exist")
            row = session.get(KbFusionTuningRow, tuned.kb_id)
            payload = tuned.model_dump(mode="json")
            now = datetime.now(UTC)
            if row is None:
                session.add(KbFusionTuningRow(kb_id=tuned.kb_id, tuned=payload, updated_at=now))
            else:
                row.tuned = payload
                row.updated_at = now

    def get_tuned_fusion(self, kb_id: str) -> TunedFusion | None:
        """The fitted fusion of a KB, or None when it was never tuned."""
        with self._sessions() as session:
            payload = session.scalar(
                select(KbFusionTuningRow.tuned).where(KbFusionTuningRow.kb_id == kb_id)
            )
        return None if payload is None else TunedFusion.model_validate(payload)

    def delete_tuned_fusion(self, kb_id: str) -> None:
        """Forget a KB's fitted fusion; requests that opt in then use the settings again."""
        with self._sessions.begin() as session:
            session.execute(delete(KbFusionTuningRow).where(KbFusionTuningRow.kb_id == kb_id))
