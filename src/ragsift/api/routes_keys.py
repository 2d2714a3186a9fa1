"""API keys for admins: create (the secret is shown once), list, revoke, rotate; the audit log."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.auth.keys import ApiKey, KeyScope, Role, parse_duration
from ragsift.auth.records import AuditEntry
from ragsift.auth.service import KeyService

router = APIRouter(tags=["access control"], responses=ERROR_RESPONSES)


class KeyCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[\w.@-]+$")
    role: Role
    scope: KeyScope = Field(default_factory=KeyScope)
    expires_in: str | None = Field(default=None, description="e.g. 90d, 12h, 2w")


class KeySecretOut(BaseModel):
    """A key with its secret: shown this once, never again."""

    key: ApiKey
    secret: str


def _keys(request: Request) -> KeyService:
    return request.app.state.authorizer.keys  # type: ignore[no-any-return]


@router.post("/api/keys", status_code=201)
def create_key(body: KeyCreate, request: Request) -> KeySecretOut:
    """Create a key; the response holds its secret, which is stored only as a hash."""
    try:
        expires = parse_duration(body.expires_in) if body.expires_in else None
    except ValueError as exc:
        raise ApiError(422, "invalid_input", str(exc)) from exc
    key, secret = _keys(request).create(body.name, body.role, body.scope, expires)
    return KeySecretOut(key=key, secret=secret)


@router.get("/api/keys")
def list_keys(request: Request) -> list[ApiKey]:
    """Every key (never a secret), oldest first."""
    return _keys(request).keys()


@router.post("/api/keys/{name}/revoke")
def revoke_key(name: str, request: Request) -> ApiKey:
    """Revoke a key at once; revoking it again changes nothing."""
    return _keys(request).revoke(name)


@router.post("/api/keys/{name}/rotate")
def rotate_key(name: str, request: Request) -> KeySecretOut:
    """A new secret for a key (same name, role and scope); the old secret stops working."""
    key, secret = _keys(request).rotate(name)
    return KeySecretOut(key=key, secret=secret)


@router.get("/api/audit")
def audit(request: Request, since: str = Query("1d", description="e.g. 1d, 12h")) -> list[
        AuditEntry]:
    """State-changing requests since then, oldest first."""
    try:
        start = datetime.now(UTC) - parse_duration(since)
    except ValueError as exc:
        raise ApiError(422, "invalid_input", str(exc)) from exc
    return _keys(request).audit_since(start)
