"""ASGI layers around the app, outermost first.

ObserveMiddleware: per-route metrics, and a JSON 500 instead of any unhandled traceback.
BodyLimitMiddleware: a 413 for a request body over the limit, before it is read whole.
ConcurrencyLimitMiddleware: a 503 + Retry-After beyond the requests one route class may run.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from enum import StrEnum

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragsift.api.errors import error_response
from ragsift.api.metrics import ApiMetrics
from ragsift.observability.context import bind_request_id

logger = logging.getLogger(__name__)

UNMATCHED_ROUTE = "unmatched"


class ObserveMiddleware:
    """Counts and times each request by route template; an escaped exception becomes a 500.

    It also gives the request its id (the client's X-Request-ID when well-formed), which log
    lines and the retrieval trace carry and the response returns as X-Request-ID.
    """

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        response_started = False
        request_id = bind_request_id(_header(scope, b"x-request-id"))

        async def observed_send(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = int(message["status"])
                response_started = True
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode("ascii")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        except Exception:
            logger.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if response_started:
                raise  # too late for a JSON body; the server closes the connection
            response = error_response(500, "internal_error", "internal error; see the server log")
            await response(scope, receive, observed_send)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED_ROUTE
            self.metrics.observe_request(
                str(scope.get("method", "")), route, status, time.perf_counter() - started
            )


# Multipart uploads stream with limits of their own (RAGSIFT_MAX_FILE_BYTES, api/uploads.py).
_UPLOAD_PATH = re.compile(r"/api/kbs/[^/]+/(?:documents|faq)")
_CHAT_PATHS = frozenset({"/api/chat", "/api/chat/stream", "/v1/chat/completions"})


class RouteClass(StrEnum):
    """The requests that share one concurrency limit."""

    SEARCH = "search"
    CHAT = "chat"
    UPLOAD = "upload"


def is_upload(scope: Scope) -> bool:
    """A POST to a multipart upload route (document upload, FAQ import)."""
    return scope.get("method") == "POST" and _UPLOAD_PATH.fullmatch(scope["path"]) is not None


def route_class(scope: Scope) -> RouteClass | None:
    """The limited class of a request, or None (not limited)."""
    path: str = scope["path"]
    if path.startswith("/api/retrieval/") or path in ("/dify/retrieval", "/v1/embeddings"):
        return RouteClass.SEARCH
    if path in _CHAT_PATHS:
        return RouteClass.CHAT
    if is_upload(scope):
        return RouteClass.UPLOAD
    return None


class _BodyTooLarge(Exception):
    """Raised from receive() once the body passes the limit; the middleware answers 413."""


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:  # the server refuses these already; count the bytes instead
                return None
    return None


class BodyLimitMiddleware:
    """A body over `max_bytes` is a 413 `request_too_large`, without reading the rest of it.

    A declared Content-Length over the limit is refused before the app runs; a body without
    one (chunked) is counted as it arrives, and the app's receive() fails at the chunk that
    passes the limit. Whatever the app then sends is dropped for the 413, unless it had started
    its response already. Multipart uploads are left to their own streamed limits.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> Response:
        return error_response(413, "request_too_large",
                              f"the request body is over the limit of {self.max_bytes} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_upload(scope):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large()(scope, receive, send)
            return
        received = 0
        exceeded = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            if exceeded:  # the app asks again after the failure: nothing more is read
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded and not started:
                return  # the app's answer to the failed read (a 400, say) gives way to the 413
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except _BodyTooLarge:
            if started:
                raise
        if exceeded and not started:
            await self._too_large()(scope, receive, send)


class ConcurrencyLimitMiddleware:
    """At most `limits[class]` requests of a route class run at once; beyond it a 503.

    Nothing waits for a slot: the request is refused at once with Retry-After, so a burst
    cannot pile up work. A slot is held until the app returns, which for a server-sent event
    stream is when the stream ends. Counters need no lock: the event loop runs one coroutine
    at a time and nothing is awaited between the check and the increment.
    """

    def __init__(
        self, app: ASGIApp, limits: Mapping[RouteClass, int], retry_after_s: int,
        metrics: ApiMetrics,
    ) -> None:
        self.app = app
        self.limits = dict(limits)
        self.retry_after_s = retry_after_s
        self.metrics = metrics
        self.running = dict.fromkeys(RouteClass, 0)
        for kind in RouteClass:
            metrics.observe_running(kind.value, 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = route_class(scope) if scope["type"] == "http" else None
        if kind is None:
            await self.app(scope, receive, send)
            return
        limit = self.limits[kind]
        if self.running[kind] >= limit:
            logger.warning("overloaded: %d %s request(s) running; refused %s %s", limit,
                           kind.value, scope.get("method"), scope["path"])
            response = error_response(
                503, "overloaded",
                f"{limit} {kind.value} request(s) are running already; retry later",
                **{"Retry-After": str(self.retry_after_s)},
            )
            await response(scope, receive, send)
            return
        self.running[kind] += 1
        self.metrics.observe_running(kind.value, self.running[kind])
        try:
            await self.app(scope, receive, send)
        finally:
            self.running[kind] -= 1
            self.metrics.observe_running(kind.value, self.running[kind])


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None
