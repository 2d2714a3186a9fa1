"""API keys and the audit log in the facts (hashes only; see ragsift.auth.keys)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.auth_orm import ApiKeyRow, AuditRow
from ragsift.adapters.sql.orm import to_utc
from ragsift.auth.keys import ApiKey, KeyScope, Role
from ragsift.auth.records import AuditEntry
from ragsift.domain.errors import InvalidInput


def _key(row: ApiKeyRow) -> ApiKey:
    return ApiKey(
        id=row.id, name=row.name, role=Role(row.role), scope=KeyScope.model_validate(row.scope),
        hint=row.hint, created_at=to_utc(row.created_at),
        expires_at=to_utc(row.expires_at) if row.expires_at else None,
        last_used_at=to_utc(row.last_used_at) if row.last_used_at else None,
        revoked_at=to_utc(row.revoked_at) if row.revoked_at else None,
    )


class KeyRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def add_key(self, key: ApiKey, secret_hash: str) -> None:
        """Store a new key; InvalidInput when its name is taken (revoked keys keep theirs)."""
        row = ApiKeyRow(
            id=key.id, name=key.name, role=key.role.value, secret_hash=secret_hash,
            hint=key.hint, scope=key.scope.model_dump(mode="json"), created_at=key.created_at,
            expires_at=key.expires_at, last_used_at=None, revoked_at=None,
        )
        try:
            with self._sessions.begin() as session:
                session.add(row)
        except IntegrityError as exc:
            raise InvalidInput(f"an API key named {key.name!r} already exists") from exc

    def key_by_hash(self, secret_hash: str) -> tuple[ApiKey, str] | None:
        """The key whose secret hashes to `secret_hash`, with the stored hash."""
        with self._sessions.begin() as session:
            row = session.scalars(
                select(ApiKeyRow).where(ApiKeyRow.secret_hash == secret_hash)).first()
            return None if row is None else (_key(row), row.secret_hash)

    def key_by_name(self, name: str) -> ApiKey | None:
        with self._sessions.begin() as session:
            row = session.scalars(select(ApiKeyRow).where(ApiKeyRow.name == name)).first()
            return None if row is None else _key(row)

    def list_keys(self) -> list[ApiKey]:
        with self._sessions.begin() as session:
            return [_key(row) for row in session.scalars(
                select(ApiKeyRow).order_by(ApiKeyRow.created_at, ApiKeyRow.name))]

    def revoke_key(self, name: str, at: datetime) -> bool:
        """Revoke a live key; False when there is none by that name (or it is revoked)."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(ApiKeyRow).where(ApiKeyRow.name == name, ApiKeyRow.revoked_at.is_(None))
                .values(revoked_at=at))
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def replace_secret(self, name: str, secret_hash: str, hint: str) -> bool:
        """Give a live key a new secret (the old one stops working at once)."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(ApiKeyRow).where(ApiKeyRow.name == name, ApiKeyRow.revoked_at.is_(None))
                .values(secret_hash=secret_hash, hint=hint))
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def touch_key(self, key_id: str, at: datetime) -> None:
        """Record a use of the key."""
        with self._sessions.begin() as session:
            session.execute(update(ApiKeyRow).where(ApiKeyRow.id == key_id)
                            .values(last_used_at=at))

    def add_audit(self, entry: AuditEntry) -> None:
        with self._sessions.begin() as session:
            session.add(AuditRow(at=entry.at, key_name=entry.key_name, method=entry.method,
                                 route=entry.route, target=entry.target, status=entry.status))

    def list_audit(self, since: datetime) -> list[AuditEntry]:
        """Entries at or after `since`, oldest first."""
        with self._sessions.begin() as session:
            rows = session.scalars(select(AuditRow).where(AuditRow.at >= since)
                                   .order_by(AuditRow.at, AuditRow.id))
            return [AuditEntry(at=to_utc(r.at), key_name=r.key_name, method=r.method,
                               route=r.route, target=r.target, status=r.status) for r in rows]
