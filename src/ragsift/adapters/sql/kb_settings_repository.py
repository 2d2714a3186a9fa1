"""A knowledge base's own settings (kb_settings, 0015): stored with the KB, one row per KB."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import KbSettingsRow, KnowledgeBaseRow, to_utc
from ragsift.domain.errors import NotFound
from ragsift.domain.kb_settings import KbSettingsRecord


class KbSettingsRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]
    # the process settings' values of the per-KB keys: a sealed version records the KB's
    # effective settings (these under its overrides); bootstrap sets them
    kb_setting_defaults: dict[str, Any]

    def get_kb_settings(self, kb_id: str) -> KbSettingsRecord:
        """The KB's stored settings (no overrides when none were ever set)."""
        with self._sessions() as session:
            row = session.get(KbSettingsRow, kb_id)
            if row is None:
                return KbSettingsRecord(kb_id)
            return KbSettingsRecord(kb_id, dict(row.overrides), row.built,
                                    to_utc(row.updated_at))

    def save_kb_settings(
        self, kb_id: str, overrides: dict[str, Any], built: dict[str, Any] | None
    ) -> KbSettingsRecord:
        """Store (replace) the KB's overrides and built-with record; NotFound for no KB."""
        now = datetime.now(UTC)
        with self._sessions.begin() as session:
            if session.get(KnowledgeBaseRow, kb_id) is None:
                raise NotFound(f"knowledge base {kb_id!r} does not exist")
            row = session.get(KbSettingsRow, kb_id)
            if row is None:
                session.add(KbSettingsRow(kb_id=kb_id, overrides=dict(overrides), built=built,
                                          updated_at=now))
            else:
                row.overrides = dict(overrides)
                row.built = built
                row.updated_at = now
        return KbSettingsRecord(kb_id, dict(overrides), built, now)

    def settings_snapshot(self, session: Session, kb_id: str) -> dict[str, Any]:
        """The KB's effective settings inside `session` (a version's seal)."""
        overrides = session.scalar(
            select(KbSettingsRow.overrides).where(KbSettingsRow.kb_id == kb_id))
        return {**self.kb_setting_defaults, **(overrides or {})}
