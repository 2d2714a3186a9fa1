"""Creating, listing, revoking and rotating API keys, and resolving a secret to its key."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from ragsift.auth.keys import (
    ApiKey,
    KeyScope,
    Role,
    hash_secret,
    new_secret,
    same_hash,
    well_formed,
)
from ragsift.auth.records import AuditEntry
from ragsift.domain.errors import NotFound

logger = logging.getLogger(__name__)

# last use is written at most this often per key, not on every request
_TOUCH_EVERY_S = 60.0
_HINT_CHARS = 7


class KeyStore(Protocol):
    def add_key(self, key: ApiKey, secret_hash: str) -> None: ...
    def key_by_hash(self, secret_hash: str) -> tuple[ApiKey, str] | None: ...
    def key_by_name(self, name: str) -> ApiKey | None: ...
    def list_keys(self) -> list[ApiKey]: ...
    def revoke_key(self, name: str, at: datetime) -> bool: ...
    def replace_secret(self, name: str, secret_hash: str, hint: str) -> bool: ...
    def touch_key(self, key_id: str, at: datetime) -> None: ...
    def add_audit(self, entry: AuditEntry) -> None: ...
    def list_audit(self, since: datetime) -> list[AuditEntry]: ...


class KeyService:
    """API keys over a KeyStore; secrets are returned once and stored as hashes."""

    def __init__(self, store: KeyStore, clock: Callable[[], datetime] | None = None) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self._touched: dict[str, float] = {}
        self._lock = threading.Lock()

    def create(
        self, name: str, role: Role, scope: KeyScope | None = None,
        expires_in: timedelta | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key and its secret (shown once, never stored)."""
        secret = new_secret()
        now = self._clock()
        key = ApiKey(
            id=uuid.uuid4().hex, name=name.strip(), role=role, scope=scope or KeyScope(),
            hint=secret[:_HINT_CHARS], created_at=now,
            expires_at=now + expires_in if expires_in is not None else None,
        )
        self._store.add_key(key, hash_secret(secret))
        logger.info("API key %r created (role %s)", key.name, role.value)
        return key, secret

    def keys(self) -> list[ApiKey]:
        return self._store.list_keys()

    def get(self, name: str) -> ApiKey:
        key = self._store.key_by_name(name)
        if key is None:
            raise NotFound(f"no API key named {name!r}")
        return key

    def revoke(self, name: str) -> ApiKey:
        """Revoke a key; revoking a revoked key again is a no-op (NotFound if unknown)."""
        key = self.get(name)
        if self._store.revoke_key(name, self._clock()):
            logger.info("API key %r revoked", name)
        return self.get(name) if key.revoked_at is None else key

    def rotate(self, name: str) -> tuple[ApiKey, str]:
        """A new secret for a live key; the old one stops working at once."""
        key = self.get(name)
        secret = new_secret()
        if key.revoked_at is not None or not self._store.replace_secret(
                name, hash_secret(secret), secret[:_HINT_CHARS]):
            raise NotFound(f"API key {name!r} is revoked; create a new one")
        logger.info("API key %r rotated", name)
        return self.get(name), secret

    def authenticate(self, secret: str) -> ApiKey | None:
        """The usable key this secret belongs to, or None (malformed, unknown, revoked,
        expired: the caller answers all of them alike)."""
        if not well_formed(secret):
            return None
        digest = hash_secret(secret)
        found = self._store.key_by_hash(digest)
        if found is None:
            return None
        key, stored = found
        now = self._clock()
        if not same_hash(stored, digest) or not key.usable(now):
            return None
        self._touch(key, now)
        return key

    def audit(self, entry: AuditEntry) -> None:
        self._store.add_audit(entry)

    def audit_since(self, since: datetime) -> list[AuditEntry]:
        return self._store.list_audit(since)

    def _touch(self, key: ApiKey, now: datetime) -> None:
        with self._lock:
            last = self._touched.get(key.id, 0.0)
            if time.monotonic() - last < _TOUCH_EVERY_S:
                return
            self._touched[key.id] = time.monotonic()
        self._store.touch_key(key.id, now)
