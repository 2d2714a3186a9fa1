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
    app, server = mcp_server.keyed_app(container, allowed_hosts,
                                       require_keys=container.settings.auth)
    # a Route whose endpoint is an ASGI app: the path stays /mcp, which the SDK's app routes
    return McpMount(Route(MCP_PATH, app), server.session_manager.run)
