"""`ragsift mcp`: the retrieval service as a Model Context Protocol server (official `mcp` SDK).

Tools (mcp_tools.py): `search`, `explain`, `list_knowledge_bases`, `get_chunk`; resource template
`ragsift://kb/{name}` (a knowledge base and its documents). Every result carries citations
(file, section, locator, chunk id); bad input is a tool error with its reason, never a crash.

Who may do what:
- stdio: the user who runs the process is trusted (they can read the data directory anyway).
  With an API key (`--api-key` / RAGSIFT_API_KEY) its KB and data scope are the ceiling of
  every call, checked again on each call, so a revoked key stops at once.
- streamable HTTP: every request needs `Authorization: Bearer KEY` (KeyService), answered 401
  without one; the key's scope is the ceiling, as in the REST API, and a session belongs to the
  key that opened it. Keys may be off only on a loopback address (the CLI refuses otherwise).

This module imports `mcp`: only `ragsift mcp` imports it (the `mcp` extra).

The streamable-HTTP key middleware and Host/Origin checks are in mcp_http.py; this module
assembles the server and its apps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp

from ragsift import __version__
from ragsift.auth.service import KeyService
from ragsift.bootstrap import Container
from ragsift.integrations.mcp_arguments import (
    READ_ONLY,
    ChunkId,
    DocumentIds,
    FaqArg,
    FilterArg,
    FusionArg,
    KbArg,
    KbsArg,
    KbVersion,
    MinScore,
    ModeArg,
    Query,
    RerankArg,
    RewriteArg,
    Roles,
    Small2BigArg,
    Switch,
    TopK,
    Values,
    Window,
)
from ragsift.integrations.mcp_http import HEALTH_PATH, KeyAuthMiddleware, transport_security
from ragsift.integrations.mcp_results import KB_URI
from ragsift.integrations.mcp_tools import SCOPE_KEY, RagsiftTools, document_visible

# the names this module had before the tools and the HTTP middleware moved out
__all__ = [
    "HEALTH_PATH", "INSTRUCTIONS", "MCP_PATH", "SCOPE_KEY", "ChunkId", "DocumentIds", "FaqArg",
    "FilterArg", "FusionArg", "KbArg", "KbVersion", "KbsArg", "KeyAuthMiddleware", "MinScore",
    "ModeArg", "Query", "RagsiftTools", "RerankArg", "RewriteArg", "Roles", "Small2BigArg",
    "Switch", "TopK", "Values", "Window", "build_server", "document_visible", "http_app",
    "keyed_app", "run_http", "run_stdio", "transport_security",
]

MCP_PATH = "/mcp"

INSTRUCTIONS = (
    "ragsift searches knowledge bases of Chinese and English documents (dense + BM25 hybrid). "
    "Call list_knowledge_bases to see what exists, search for evidence, and cite each piece "
    "you use by its citation label (file, section, page). get_chunk returns a chunk with its "
    "section and neighbouring passages; explain shows why the evidence was chosen."
)


def build_server(container: Container, api_key: str | None = None,
                 http_keys: bool = True) -> MCPServer[Any]:
    """The MCP server over `container`; `api_key` scopes the stdio transport, `http_keys`
    says whether HTTP requests must carry a key (KeyAuthMiddleware)."""
    tools = RagsiftTools(container, api_key, http_keys)
    server: MCPServer[Any] = MCPServer(
        "ragsift", title="ragsift retrieval", version=__version__, instructions=INSTRUCTIONS,
        # the SDK's logging.basicConfig, a no-op once the ragsift command configured stderr
        log_level="WARNING",
    )
    for name, fn, title in (
        ("search", tools.search, "Search a knowledge base"),
        ("explain", tools.explain, "Search and explain the ranking"),
        ("list_knowledge_bases", tools.list_knowledge_bases, "List knowledge bases"),
        ("get_chunk", tools.get_chunk, "Get a chunk with its context"),
    ):
        server.add_tool(fn, name=name, title=title, annotations=READ_ONLY,
                        structured_output=True)
    server.resource(KB_URI, name="knowledge_base", title="Knowledge base",
                    mime_type="application/json")(tools.knowledge_base)

    server.custom_route(HEALTH_PATH, methods=["GET"])(_health)
    return server


async def _health(_request: Request) -> Response:
    return PlainTextResponse("ok")


def http_app(container: Container, hosts: Sequence[str], require_keys: bool) -> ASGIApp:
    """The streamable-HTTP app at /mcp (and /healthz), keys required unless `require_keys`
    is False (the CLI allows that on loopback addresses only)."""
    app = keyed_app(container, hosts, require_keys)[0]
    if container.spans is None:
        return app
    from ragsift.observability.otel_http import TraceMiddleware  # the `otel` extra

    return TraceMiddleware(app, container.spans.provider)  # join the callers' traces


def keyed_app(container: Container, hosts: Sequence[str] | None, require_keys: bool
              ) -> tuple[ASGIApp, MCPServer[Any]]:
    """`http_app` and its server, whose `session_manager.run()` must be running while the app
    serves: its own lifespan runs it; `ragsift serve`, which routes /mcp to the app, runs it
    in its lifespan. `hosts` None: no Host or Origin check (in-process clients only)."""
    settings = container.settings
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    security = (TransportSecuritySettings(enable_dns_rebinding_protection=False)
                if hosts is None else transport_security(hosts, origins))
    server = build_server(container, http_keys=require_keys)
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH,
                                              transport_security=security)
    if not require_keys:
        return app, server
    return KeyAuthMiddleware(app, KeyService(container.repository), settings.key_rate_per_s,
                             settings.key_burst, settings.bad_key_rate_per_s,
                             settings.bad_key_burst), server


def run_stdio(container: Container, api_key: str | None) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    build_server(container, api_key).run("stdio")


def run_http(app: ASGIApp, host: str, port: int, graceful_s: float,
             keep_alive_s: int) -> bool:
    """Serve the streamable-HTTP app under uvicorn until SIGINT/SIGTERM; False if it never
    started (the port taken, say). `keep_alive_s` as `ragsift serve`'s (RAGSIFT_KEEP_ALIVE_S)."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="info",
                            timeout_graceful_shutdown=max(1, int(graceful_s)),
                            timeout_keep_alive=keep_alive_s)
    server = uvicorn.Server(config)
    server.run()
    return bool(server.started)
