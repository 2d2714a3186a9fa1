"""API keys as values: a role, a data scope that is a ceiling, and a secret shown once.

Only the SHA-256 of a secret is stored. The secrets carry 256 bits of randomness, so a fast
hash is enough (a slow password hash protects guessable secrets, which these are not), and
lookups by hash need no per-key work; the final comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

PREFIX = "rs_"
_SECRET = re.compile(r"rs_[A-Za-z0-9_-]{43}")
_DURATION = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class Role(StrEnum):
    """reader: search, explain, chat and its own conversations; editor: + documents, FAQ,
    reindex; admin: + knowledge bases, versions, keys, maintenance, audit."""

    READER = "reader"
    EDITOR = "editor"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        """Whether this role includes `needed`."""
        order = (Role.READER, Role.EDITOR, Role.ADMIN)
        return order.index(self) >= order.index(needed)


class KeyScope(BaseModel):
    """The data a key may reach; an empty tuple means no restriction on that dimension."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kb_ids: tuple[str, ...] = ()
    tenant_ids: tuple[str, ...] = ()
    dataset_ids: tuple[str, ...] = ()
    visibilities: tuple[str, ...] = ()
    data_roles: tuple[str, ...] = ()


class ApiKey(BaseModel):
    """A stored key (never its secret)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str = Field(min_length=1, max_length=100)
    role: Role
    scope: KeyScope = Field(default_factory=KeyScope)
    hint: str = Field(description="the secret's first characters, to tell keys apart")
    created_at: datetime
    expires_at: datetime | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None

    def usable(self, now: datetime) -> bool:
        """Neither revoked nor expired."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


def new_secret() -> str:
    """A fresh secret: the prefix and 32 random bytes, URL-safe base64 (43 characters)."""
    return PREFIX + secrets.token_urlsafe(32)


def well_formed(secret: str) -> bool:
    """Whether `secret` has the shape of a key (checked before any lookup)."""
    return _SECRET.fullmatch(secret) is not None


def hash_secret(secret: str) -> str:
    """The stored form of a secret."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def same_hash(a: str, b: str) -> bool:
    """Constant-time comparison of two stored hashes."""
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))


def parse_duration(text: str) -> timedelta:
    """`90d`, `12h`, `30m`, `2w`, `45s` as a duration; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90d, 12h, 30m, 2w)")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
