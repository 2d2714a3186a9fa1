"""Outermost ASGI layer: per-route metrics, and a JSON 500 instead of any unhandled traceback."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragsift.api.errors import error_response
from ragsift.api.metrics import ApiMetrics

logger = logging.getLogger(__name__)

UNMATCHED_ROUTE = "unmatched"


class ObserveMiddleware:
    """Counts and times each request by route template; an escaped exception becomes a 500."""

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

        async def observed_send(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = int(message["status"])
                response_started = True
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
