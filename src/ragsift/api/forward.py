"""Search processes of `ragsift serve --search-processes N`: their HTTP front, and the main
process's side of what they forward.

The main process writes the data directory; each search process opens it read-only (the index
follows the main process's commits) and listens on the same address (SO_REUSEPORT: the kernel
spreads connections over the processes). A search process answers the searches and the health
probes itself; every other request (uploads, deletes, chat, the web pages, keys, metrics) goes
to the main process unchanged over its unix socket, response streamed back (SSE included),
so that what writes, and what keeps per-process state, stays in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

# answered by a search process itself: they only read
LOCAL_ROUTES = frozenset({
    ("POST", "/api/retrieval/search"), ("POST", "/api/retrieval/explain"),
    ("POST", "/dify/retrieval"), ("GET", "/healthz"), ("GET", "/readyz"),
})
# the client's address, set by a search process on what it forwards (see ForwardedClient)
FORWARDED_FOR = b"x-ragsift-forwarded-for"
# on the answers a search process gives itself (ops and tests tell the processes apart)
SERVED_BY = (b"x-ragsift-process", b"search")
_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate",
                         b"proxy-authorization", b"te", b"trailer", b"transfer-encoding",
                         b"upgrade"})


class SearchFront:
    """The ASGI app of a search process: `app` for LOCAL_ROUTES, the main process otherwise."""

    def __init__(self, app: ASGIApp, main_socket: Path, connect_timeout_s: float) -> None:
        self._app = app
        self._socket = main_socket
        # no read timeout: a forwarded stream or ingest takes what the main process gives it
        self._timeout = httpx.Timeout(None, connect=connect_timeout_s)
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            if self._client is not None:
                await self._client.aclose()
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        if (scope["method"], scope["path"]) in LOCAL_ROUTES:
            await self._app(scope, receive, _marked(send))
            return
        await self._forward(scope, receive, send)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # made in the serving loop, on first need
            transport = httpx.AsyncHTTPTransport(uds=str(self._socket))
            self._client = httpx.AsyncClient(transport=transport, base_url="http://ragsift",
                                             timeout=self._timeout)
        return self._client

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in scope["headers"]
                   if k.lower() not in _HOP_BY_HOP and k.lower() != FORWARDED_FOR]
        client = scope.get("client")
        if client:
            headers.append((FORWARDED_FOR, f"{client[0]}:{client[1]}".encode("latin-1")))
        # the path as the client sent it: decoding and encoding again would turn %2F into /
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        query = scope.get("query_string", b"")
        target = httpx.URL(raw_path=raw + (b"?" + query if query else b""))
        http = self._http()
        request = http.build_request(scope["method"], target, headers=headers,
                                     content=_body(receive))
        try:
            response = await http.send(request, stream=True)
        except httpx.TransportError as exc:
            logger.warning("could not forward %s %s to the main process: %s",
                           scope["method"], scope["path"], exc)
            await _unavailable(send)
            return
        try:
            await _relay(response, receive, send)
        finally:
            await response.aclose()


def _marked(send: Send) -> Send:
    async def marked(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), SERVED_BY]}
        await send(message)

    return marked


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _relay(response: httpx.Response, receive: Receive, send: Send) -> None:
    """Stream the main process's answer; a client that goes away ends it (and the upstream
    connection, so the main process sees the disconnect as it would directly)."""
    headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_BY_HOP]
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": headers})

    async def pump() -> None:
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    streaming = asyncio.ensure_future(pump())
    watching = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (streaming, watching):
            task.cancel()
        for task in (streaming, watching):
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if streaming.done() and not streaming.cancelled():
        streaming.result()  # raises what failed the relay


async def _unavailable(send: Send) -> None:
    body = b'{"code": "main_process_unavailable", "message": "the main server process ' \
           b'cannot be reached; retry"}'
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})


class ForwardedClient:
    """Main process: a request from its unix socket (only its search processes reach it: the
    socket is the owner's alone) names its client in FORWARDED_FOR; take it as the client.
    TCP requests always have their own address, so the header is never read from them."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("client"):
            for name, value in scope["headers"]:
                if name == FORWARDED_FOR:
                    host, _, port = value.decode("latin-1").rpartition(":")
                    scope = {**scope, "client": (host, int(port) if port.isdigit() else 0)}
                    break
        await self._app(scope, receive, send)

