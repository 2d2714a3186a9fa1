"""`ragsift mcp`: the Model Context Protocol server, over stdio or streamable HTTP.

The `mcp` SDK (the `mcp` extra) is imported only when the command runs.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from ragsift.cli.common import CliFailure, open_container
from ragsift.cli.options import DataDir
from ragsift.cli.serve import STARTUP_FAILURE, is_loopback

if TYPE_CHECKING:
    from ragsift.bootstrap import Container
    from ragsift.config import Settings

logger = logging.getLogger(__name__)

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class Transport(StrEnum):
    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable-http"


def exposure(settings: Settings, host: str, no_auth: bool) -> tuple[bool, list[str]]:
    """Whether HTTP clients need keys, and the Host names to answer.

    Keys may be off only on a loopback address (as for `ragsift serve`); the names are the
    loopback ones, the bind address and RAGSIFT_ALLOWED_HOSTS (DNS rebinding is refused).
    """
    keys = settings.auth and not no_auth
    if not keys and not is_loopback(host):
        raise CliFailure(
            f"refusing to serve MCP on {host} without API keys: keys may be off only on a "
            "loopback address (create one with `ragsift keys create --name NAME --role reader`)",
            2)
    extra = [h.strip() for h in settings.allowed_hosts.split(",") if h.strip()]
    wildcard = host in ("0.0.0.0", "::", "")
    return keys, [*_LOOPBACK_NAMES, *([] if wildcard else [host]), *extra]


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise CliFailure("`ragsift mcp` needs the MCP SDK: pip install 'ragsift[mcp]'", 2) from exc


def mcp(
    transport: Annotated[Transport, typer.Option(
        help="stdio (a client starts this process) or streamable-http (a server at /mcp).",
        case_sensitive=False)] = Transport.STDIO,
    host: Annotated[str, typer.Option(help="streamable-http: address to listen on.")
                    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="streamable-http: port to listen on.",
                                      min=0, max=65535)] = 8000,
    data_dir: DataDir = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", envvar="RAGSIFT_API_KEY", show_envvar=True,
        help="stdio: apply this API key's KB and data scope to every call (the local user "
             "is trusted without one). Prefer the variable: arguments show in `ps`.")] = None,
    no_auth: Annotated[bool, typer.Option(
        "--no-auth", help="streamable-http: no API keys (loopback addresses only).")] = False,
) -> None:
    """Serve the knowledge bases to MCP clients (Model Context Protocol).

    Tools search, explain, list_knowledge_bases and get_chunk; resources ragsift://kb/{name}.
    Over stdio the user running the process is trusted. Over streamable HTTP (at /mcp) every
    request needs `Authorization: Bearer KEY` (`ragsift keys create`), unless --no-auth on a
    loopback address.
    """
    _require_sdk()
    from ragsift.integrations import mcp_server

    logging.getLogger("ragsift").setLevel(logging.INFO)
    if transport == Transport.STDIO:
        with contextlib.ExitStack() as stack:
            # stdout carries the protocol: what building the services says goes to stderr
            # (while serving, the SDK points fd 1 at stderr itself)
            with contextlib.redirect_stdout(sys.stderr):
                container = stack.enter_context(open_container(data_dir, follow=True))
                if api_key is not None:
                    _check_key(container, api_key)
            logger.info("MCP server on stdio over %s", container.settings.data_dir)
            mcp_server.run_stdio(container, api_key)
        return
    if api_key is not None:
        logger.warning("--api-key / RAGSIFT_API_KEY is ignored over HTTP: each client sends "
                       "its own key (Authorization: Bearer)")
    with open_container(data_dir, follow=True) as container:
        keys, hosts = exposure(container.settings, host, no_auth)
        if keys:
            logger.info("MCP over streamable HTTP at http://%s:%d%s: API keys required "
                        "(Authorization: Bearer KEY)", host, port, mcp_server.MCP_PATH)
        else:
            logger.warning("MCP over streamable HTTP at http://%s:%d%s with API keys OFF: "
                           "anyone who can reach %s may search every knowledge base",
                           host, port, mcp_server.MCP_PATH, host)
        app = mcp_server.http_app(container, hosts, require_keys=keys)
        if not mcp_server.run_http(app, host, port, container.settings.shutdown_timeout_s,
                                   container.settings.keep_alive_s):
            raise CliFailure("the server did not start; see the log above", STARTUP_FAILURE)


def _check_key(container: Container, secret: str) -> None:
    from ragsift.auth.service import KeyService

    key = KeyService(container.repository).authenticate(secret)
    if key is None:
        raise CliFailure("the API key (--api-key / RAGSIFT_API_KEY) is unknown, revoked or "
                         "expired", 2)
    logger.info("calls are scoped by API key %r", key.name)
