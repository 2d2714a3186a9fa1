"""MCP (streamable HTTP) at /mcp on `ragsift serve`: the `ragsift mcp` tools on the API's port.

The same API keys as /api (Authorization: Bearer; 401 without one, unless auth is off), each
key's KB and data scope the ceiling of every tool call, Host and Origin checked as by
`ragsift mcp` (the app's TrustedHostMiddleware answers a foreign Host first). The MCP session
manager runs inside the app's lifespan. Without the `mcp` extra /mcp is not served.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ragsift.bootstrap import Container

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"


@dataclass(frozen=True, slots=True)
class McpMount:
    """The route to add and what the lifespan must keep running while it serves."""

    route: Route
    running: Callable[[], AbstractAsyncContextManager[None]]


def mcp_mount(container: Container, allowed_hosts: Sequence[str] | None) -> McpMount | None:
    """The /mcp route over `container`, or None (RAGSIFT_SERVE_MCP off, or no `mcp` SDK)."""
    if not container.settings.serve_mcp:
        return None
    try:  # the `mcp` extra: without it the API serves everything else
        from ragsift.integrations import mcp_server
    except ImportError:
        logger.info("MCP is not served at %s: the MCP SDK is not installed "
                    "(pip install 'ragsift[mcp]')", MCP_PATH)
        return None
    def build() -> tuple[ASGIApp, AbstractAsyncContextManager[None]]:
        app, server = mcp_server.keyed_app(container, allowed_hosts,
                                           require_keys=container.settings.auth)
        return app, server.session_manager.run()

    named = _Named(build)
    # a Route whose endpoint is an ASGI app: the path stays /mcp, which the SDK's app routes
    named.route = Route(MCP_PATH, named)
    return McpMount(named.route, named.running)


class _Named:
    """Leaves its route in the scope, as FastAPI does for its own routes only: the metrics
    and the server span read the route template there."""

    def __init__(self, build: Callable[[], tuple[ASGIApp, AbstractAsyncContextManager[None]]]
                 ) -> None:
        self._build = build
        self.app, run = build()
        self._run: AbstractAsyncContextManager[None] | None = run
        self.route: Route | None = None

    def running(self) -> AbstractAsyncContextManager[None]:
        """The session manager's run for this lifespan: the SDK's manager runs once per
        instance, and an app's lifespan may start again (tests, an embedding server), so a
        second start builds a fresh MCP app (sessions of the first run are gone anyway)."""
        if self._run is None:
            self.app, self._run = self._build()
        run, self._run = self._run, None
        return run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self.route
        await self.app(scope, receive, send)
