"""The one authorization dependency of the API: key, role, KB and scope, rate and concurrency.

Every router of the API is included with `Depends(authorizer)`: it reads the route's role from
api/access.py, authenticates the bearer key, checks the KB a path names (directly, through a
document, or a conversation's owner), applies the key's rate and concurrency limits, and leaves
the Principal on `request.state.principal` for the handlers that narrow a search to the key's
scope (`Principal.ceiling`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, cast
from urllib.parse import urlsplit

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragsift.api.access import required_role
from ragsift.api.errors import ApiError
from ragsift.api.limits import Concurrency, TokenBuckets
from ragsift.api.metrics import ApiMetrics
from ragsift.auth.keys import ApiKey, Role
from ragsift.auth.records import AuditEntry
from ragsift.auth.service import KeyService
from ragsift.bootstrap import Container
from ragsift.domain.filters import roles_allow
from ragsift.domain.models import DocumentScope

logger = logging.getLogger(__name__)

_BAD_KEY_LOG_EVERY_S = 10.0
_QUERY_KEY_NAMES = frozenset({"api_key", "apikey", "key", "token", "access_token"})


class AuthError(ApiError):
    """401/403/429 with the headers they need."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str]) -> None:
        super().__init__(status, code, message)
        self.headers = headers


def _unauthorized(message: str) -> AuthError:
    return AuthError(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})


def _forbidden(message: str) -> AuthError:
    return AuthError(403, "forbidden", message, {})


@dataclass(frozen=True, slots=True)
class Principal:
    """Who sends a request: a key, or nobody when auth is off (then nothing is narrowed)."""

    key: ApiKey | None

    @property
    def name(self) -> str | None:
        return None if self.key is None else self.key.name

    def check_kb(self, kb_id: str) -> None:
        """403 unless the key may reach this knowledge base."""
        if self.key is not None and self.key.scope.kb_ids and kb_id not in self.key.scope.kb_ids:
            raise _forbidden(f"API key {self.key.name!r} may not use knowledge base {kb_id!r}")

    def allows_kb(self, kb_id: str) -> bool:
        return self.key is None or not self.key.scope.kb_ids or kb_id in self.key.scope.kb_ids

    def sees(self, scope: DocumentScope) -> bool:
        """Whether a document of `scope` lies within the key's tenants, datasets, levels and
        data roles (a key without data roles may name any role, so roles do not bound it)."""
        if self.key is None:
            return True
        ceiling = self.key.scope
        if ceiling.data_roles and not roles_allow(scope.allowed_roles,
                                                  frozenset(ceiling.data_roles)):
            return False
        return all(not allowed or value in allowed for value, allowed in (
            (scope.tenant_id, ceiling.tenant_ids), (scope.dataset_id, ceiling.dataset_ids),
            (scope.visibility, ceiling.visibilities)))

    def written_scope(self, scope: DocumentScope) -> DocumentScope:
        """The scope a key may give new documents: within its own (a dimension it restricts
        to one value is filled in when not given); 403 outside it."""
        if self.key is None:
            return scope
        ceiling = self.key.scope
        values: dict[str, str | None] = {}
        for field, allowed, what in (("tenant_id", ceiling.tenant_ids, "tenant"),
                                     ("dataset_id", ceiling.dataset_ids, "dataset"),
                                     ("visibility", ceiling.visibilities, "visibility")):
            value = getattr(scope, field)
            if allowed and value is None and len(allowed) == 1:
                value = allowed[0]
            if allowed and value not in allowed:
                raise _forbidden(f"API key {self.key.name!r} may only write documents of "
                                 f"{what} {', '.join(map(repr, allowed))}")
            values[field] = value
        return scope.model_copy(update=values)

    def narrow(
        self, what: str, requested: Sequence[str] | None, ceiling: Sequence[str]
    ) -> tuple[str, ...] | None:
        """The request's values within the key's: its own when inside, the key's when none;
        403 when it names one outside (never silently nothing)."""
        given = None if requested is None else tuple(requested)
        if self.key is None or not ceiling:
            return given
        if given is None:
            return tuple(ceiling)
        outside = sorted(set(given) - set(ceiling))
        if outside:
            raise _forbidden(f"{what} {', '.join(map(repr, outside))} outside the scope of "
                             f"API key {self.key.name!r}")
        return given

    def ceiling(
        self, tenant_ids: Sequence[str] | None, dataset_ids: Sequence[str] | None,
        visibilities: Sequence[str] | None, roles: Sequence[str] | None,
    ) -> dict[str, tuple[str, ...] | None]:
        """The scope fields of a search narrowed to the key's scope."""
        scope = self.key.scope if self.key is not None else None
        return {
            "tenant_ids": self.narrow("tenant", tenant_ids, scope.tenant_ids if scope else ()),
            "dataset_ids": self.narrow("dataset", dataset_ids,
                                       scope.dataset_ids if scope else ()),
            "visibilities": self.narrow("visibility", visibilities,
                                        scope.visibilities if scope else ()),
            "roles": self.narrow("data role", roles, scope.data_roles if scope else ()),
        }


class Authorizer:
    """The dependency; one per app."""

    def __init__(self, container: Container, metrics: ApiMetrics) -> None:
        settings = container.settings
        self._container = container
        self._enabled = settings.auth
        self._metrics_public = settings.metrics_public
        self._cors_origins = frozenset(
            o.strip() for o in settings.cors_origins.split(",") if o.strip())
        self._keys = KeyService(container.repository)
        self._metrics = metrics
        self._rate = TokenBuckets(settings.key_rate_per_s, settings.key_burst)
        self._running = Concurrency(settings.key_max_concurrent)
        self._bad = TokenBuckets(settings.bad_key_rate_per_s, settings.bad_key_burst)
        self._bad_lock = threading.Lock()
        self._bad_count = 0
        self._bad_logged = 0.0

    @property
    def keys(self) -> KeyService:
        return self._keys

    async def __call__(self, request: Request) -> AsyncIterator[Principal]:
        self._check_origin(request)
        route = getattr(request.scope.get("route"), "path", request.url.path)
        needed = required_role(request.method, route)
        if needed == Role.ADMIN and route == "/metrics" and self._metrics_public:
            needed = None
        if not self._enabled or needed is None:
            principal = Principal(None)
            request.state.principal = principal
            yield principal
            return
        key = await self._authenticate(request)
        request.state.principal = Principal(key)  # the audit names refused keys too
        try:
            if not key.role.allows(needed):
                raise _forbidden(f"API key {key.name!r} is a {key.role.value}; this needs "
                                 f"{needed.value}")
            principal = Principal(key)
            await run_in_threadpool(self._check_path, principal, request)
        except AuthError:
            self._metrics.observe_key(key.name, "forbidden")
            raise
        wait_s = self._rate.take(key.id)
        if wait_s:
            self._metrics.observe_key(key.name, "rate_limited")
            raise AuthError(429, "rate_limited", f"API key {key.name!r} is over its request "
                            "rate (RAGSIFT_KEY_RATE_PER_S)",
                            {"Retry-After": TokenBuckets.retry_after(wait_s)})
        if not self._running.enter(key.id):
            self._metrics.observe_key(key.name, "busy")
            raise AuthError(429, "rate_limited", f"API key {key.name!r} has too many requests "
                            "running (RAGSIFT_KEY_MAX_CONCURRENT)", {"Retry-After": "1"})
        self._metrics.observe_key(key.name, "ok")
        request.state.principal = principal
        try:
            yield principal
        finally:
            self._running.leave(key.id)

    def _check_origin(self, request: Request) -> None:
        """Refuse a state-changing request a page of another origin sent (even with auth
        off: a form post or multipart upload is a "simple" request browsers send anywhere)."""
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return
        origin = request.headers.get("origin")
        fetch_site = request.headers.get("sec-fetch-site")
        if origin is None and fetch_site in (None, "same-origin", "none"):
            return  # not from a page of another origin (curl, SDKs, same-origin fetch)
        if origin is not None and (origin in self._cors_origins
                                   or urlsplit(origin).netloc == request.headers.get("host")):
            return
        raise _forbidden(f"cross-site {request.method} from {origin or fetch_site!r} refused "
                         "(allow an origin with RAGSIFT_CORS_ORIGINS)")

    async def _authenticate(self, request: Request) -> ApiKey:
        if _QUERY_KEY_NAMES & {name.lower() for name in request.query_params}:
            raise _unauthorized("API keys go in the Authorization header, never in the URL")
        header = request.headers.get("authorization")
        if header is None:
            raise self._bad_attempt(request, "missing Authorization: Bearer header")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret or secret != secret.strip():
            raise self._bad_attempt(request, "the Authorization header must be 'Bearer KEY'")
        key = await run_in_threadpool(self._keys.authenticate, secret)
        if key is None:
            raise self._bad_attempt(request, "the API key is unknown, revoked or expired")
        return key

    def _bad_attempt(self, request: Request, message: str) -> AuthError:
        """401 for one bad attempt; 429 once a client makes too many (logged per interval)."""
        client = request.client.host if request.client else "-"
        self._metrics.observe_key("-", "unauthorized")
        now = time.monotonic()
        with self._bad_lock:
            self._bad_count += 1
            if now - self._bad_logged >= _BAD_KEY_LOG_EVERY_S:
                logger.warning("%d request(s) with a missing or bad API key in the last "
                               "%.0f s (latest from %s: %s)", self._bad_count,
                               _BAD_KEY_LOG_EVERY_S, client, message)
                self._bad_count = 0
                self._bad_logged = now
        wait_s = self._bad.take(client)
        if wait_s:
            return AuthError(429, "rate_limited", "too many requests with bad API keys",
                             {"Retry-After": TokenBuckets.retry_after(wait_s)})
        return _unauthorized(message)

    def _check_path(self, principal: Principal, request: Request) -> None:
        """The KB a path names, directly or through a document or a conversation."""
        params = request.path_params
        if "kb_id" in params:
            principal.check_kb(str(params["kb_id"]))
        repository = self._container.repository
        if "asset_id" in params:  # an image follows its document
            asset = repository.get_asset(str(params["asset_id"]))
            if asset is not None:
                self._check_document(principal, asset.document_id,
                                     f"asset {params['asset_id']!r}")
        if "document_id" in params:
            self._check_document(principal, str(params["document_id"]),
                                 f"document {params['document_id']!r}")
        if "conversation_id" in params and principal.key is not None:
            exists, owner = self._container.conversations.conversation_owner(
                str(params["conversation_id"]))
            if exists and owner != principal.key.name:
                # another key's conversation is not there for this key
                raise ApiError(404, "not_found",
                               f"conversation {params['conversation_id']!r} does not exist")

    def _check_document(self, principal: Principal, document_id: str, named: str) -> None:
        """The document's KB must be the key's; outside the key's data it is not there."""
        document = self._container.repository.get_document(document_id)
        if document is not None:
            principal.check_kb(document.kb_id)
            if not principal.sees(document.scope):
                raise ApiError(404, "not_found", f"{named} does not exist")


def _principal(request: Request) -> Principal:
    return cast(Principal, getattr(request.state, "principal", Principal(None)))


CurrentPrincipal = Annotated[Principal, Depends(_principal)]


class AuditMiddleware:
    """Records every state-changing /api request (time, key, route, target ids, status), and
    OpenAI-compatible chat completions (each stores a conversation).

    Searches and explains (Dify's retrieval too) are POSTs that change nothing: not recorded.
    """

    def __init__(self, app: ASGIApp, keys: KeyService) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method", "")
        path: str = scope.get("path", "")
        if (scope["type"] != "http" or method in ("GET", "HEAD", "OPTIONS")
                or not path.startswith(("/api/", "/v1/chat/"))
                or path.startswith("/api/retrieval/")):
            await self.app(scope, receive, send)
            return
        status = 500

        async def recorded(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recorded)
        finally:
            principal = scope.get("state", {}).get("principal")
            route = getattr(scope.get("route"), "path", path)
            params = scope.get("path_params") or {}
            entry = AuditEntry(
                at=datetime.now(UTC),
                key_name=principal.name if isinstance(principal, Principal) else None,
                method=method, route=route, status=status,
                target=",".join(f"{k}={v}" for k, v in sorted(params.items())) or None,
            )
            try:
                await run_in_threadpool(self.keys.audit, entry)
            except Exception:  # the request happened; a lost audit row must be visible
                logger.exception("could not record %s %s in the audit log", method, route)
