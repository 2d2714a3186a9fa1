"""The streamable-HTTP side of `ragsift mcp`: the API-key middleware and the Host/Origin checks.

Every request but /healthz needs `Authorization: Bearer KEY` (KeyService), answered 401
without one; the key's scope is the ceiling, as in the REST API, and a session belongs to the
key that opened it. mcp_server.py assembles the app.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from urllib.parse import parse_qs

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ragsift.api.limits import TokenBuckets
from ragsift.auth.keys import ApiKey
from ragsift.auth.service import KeyService
from ragsift.integrations.mcp_tools import SCOPE_KEY

# the name the key log had before this module was split from mcp_server.py
logger = logging.getLogger("ragsift.integrations.mcp_server")

HEALTH_PATH = "/healthz"
_QUERY_KEY_NAMES = frozenset({"api_key", "apikey", "key", "token", "access_token"})
_BAD_KEY_LOG_EVERY_S = 10.0


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None
           ) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


class KeyAuthMiddleware:
    """Every HTTP request but /healthz needs `Authorization: Bearer KEY` (401 otherwise).

    The key is left in the ASGI scope for the tools, and as the scope's `user`, so the SDK
    binds each MCP session to the key that opened it. Per-key request rate and the rate of
    bad-key attempts per client follow the REST API's settings (429 beyond them).
    """

    def __init__(self, app: ASGIApp, keys: KeyService, rate_per_s: float, burst: int,
                 bad_rate_per_s: float, bad_burst: int) -> None:
        self.app = app
        self._keys = keys
        self._rate = TokenBuckets(rate_per_s, burst)
        self._bad = TokenBuckets(bad_rate_per_s, bad_burst)
        self._bad_count = 0
        self._bad_logged = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == HEALTH_PATH:
            await self.app(scope, receive, send)
            return
        key, refusal = await self._authenticate(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        assert key is not None
        wait_s = self._rate.take(key.id)
        if wait_s:
            await _error(429, "rate_limited", f"API key {key.name!r} is over its request rate "
                         "(RAGSIFT_KEY_RATE_PER_S)",
                         {"Retry-After": TokenBuckets.retry_after(wait_s)})(scope, receive, send)
            return
        token = AccessToken(token=key.id, client_id=key.id, scopes=[key.role.value])
        scope = {**scope, SCOPE_KEY: key, "user": AuthenticatedUser(token),
                 "auth": AuthCredentials([key.role.value])}
        await self.app(scope, receive, send)

    async def _authenticate(self, scope: Scope) -> tuple[ApiKey | None, Response | None]:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if _QUERY_KEY_NAMES & {name.lower() for name in query}:
            return None, self._bad_attempt(
                scope, "API keys go in the Authorization header, never in the URL")
        header = Headers(scope=scope).get("authorization")
        if header is None:
            return None, self._bad_attempt(scope, "missing Authorization: Bearer header")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret or secret != secret.strip():
            return None, self._bad_attempt(scope, "the Authorization header must be 'Bearer KEY'")
        key = await anyio.to_thread.run_sync(self._keys.authenticate, secret)
        if key is None:
            return None, self._bad_attempt(scope, "the API key is unknown, revoked or expired")
        return key, None

    def _bad_attempt(self, scope: Scope, message: str) -> Response:
        client = scope.get("client")
        address = client[0] if client else "-"
        self._bad_count += 1  # one event loop: no lock needed
        now = time.monotonic()
        if now - self._bad_logged >= _BAD_KEY_LOG_EVERY_S:
            logger.warning("%d MCP request(s) with a missing or bad API key in the last %.0f s "
                           "(latest from %s: %s)", self._bad_count, _BAD_KEY_LOG_EVERY_S,
                           address, message)
            self._bad_count, self._bad_logged = 0, now
        wait_s = self._bad.take(address)
        if wait_s:
            return _error(429, "rate_limited", "too many requests with bad API keys",
                          {"Retry-After": TokenBuckets.retry_after(wait_s)})
        return _error(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})


def transport_security(hosts: Sequence[str], origins: Sequence[str]) -> TransportSecuritySettings:
    """Host and Origin checks (DNS rebinding): these names, on any port."""
    names = [f"[{h}]" if ":" in h and not h.startswith("[") else h for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[pattern for name in names for pattern in (name, f"{name}:*")],
        allowed_origins=[*(f"{scheme}://{name}{port}" for name in names
                           for scheme in ("http", "https") for port in ("", ":*")), *origins],
    )

