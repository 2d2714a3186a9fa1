"""The search process's front: its own answers for searches and probes, everything else
relayed to the main process over a unix socket (a real uvicorn there), streams included."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ragsift.api.forward import FORWARDED_FOR, ForwardedClient, SearchFront


async def _echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"path": request.url.path, "query": request.url.query,
                         "raw_path": request.scope["raw_path"].decode(),
                         "body": body.decode(), "client": list(request.client or ()),
                         "headers": dict(request.headers)}, status_code=201)


async def _stream(_: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
        for i in range(3):
            yield f"event: part\ndata: {i}\n\n".encode()
            await asyncio.sleep(0.01)

    return StreamingResponse(parts(), media_type="text/event-stream")


MAIN = ForwardedClient(Starlette(routes=[
    Route("/api/kbs", _echo, methods=["POST"]),
    Route("/api/kbs/{name:path}", _echo, methods=["POST"]),
    Route("/api/chat/stream", _stream, methods=["POST"])]))


async def _local(scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse({"local": scope["path"]})(scope, receive, send)


@pytest.fixture
def main_socket(tmp_path: Path) -> Iterator[Path]:
    """A real uvicorn serving MAIN on a unix socket, in a thread."""
    path = tmp_path / "main.sock"
    server = uvicorn.Server(uvicorn.Config(MAIN, uds=str(path), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    yield path
    server.should_exit = True
    thread.join(timeout=10)


def _client(front: SearchFront) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=front, client=("203.0.113.7", 4321))
    return httpx.AsyncClient(transport=transport, base_url="http://ragsift")


def test_searches_and_probes_are_answered_here_and_marked(main_socket: Path) -> None:
    async def check() -> list[httpx.Response]:
        async with _client(SearchFront(_local, main_socket, 5)) as client:
            return [await client.post("/api/retrieval/search", json={}),
                    await client.get("/healthz")]

    for response in anyio.run(check):
        assert response.json()["local"] in ("/api/retrieval/search", "/healthz")
        assert response.headers["x-ragsift-process"] == "search"


def test_other_requests_reach_the_main_process_with_the_clients_address(
    main_socket: Path,
) -> None:
    async def check() -> httpx.Response:
        async with _client(SearchFront(_local, main_socket, 5)) as client:
            return await client.post("/api/kbs?x=1", content=b"payload " * 10_000, headers={
                "x-ragsift-forwarded-for": "10.0.0.1:1", "authorization": "Bearer k",
                "connection": "keep-alive"})

    response = anyio.run(check)
    assert response.status_code == 201 and "x-ragsift-process" not in response.headers
    seen = response.json()
    assert seen["path"] == "/api/kbs" and seen["query"] == "x=1"
    assert seen["body"] == "payload " * 10_000
    assert seen["client"] == ["203.0.113.7", 4321]  # the client's, not one it claimed
    assert seen["headers"]["authorization"] == "Bearer k"


def test_a_path_reaches_the_main_process_as_the_client_encoded_it(main_socket: Path) -> None:
    async def check() -> httpx.Response:
        async with _client(SearchFront(_local, main_socket, 5)) as client:
            return await client.post("/api/kbs/a%2Fb%20c?q=%C3%A9")

    seen = anyio.run(check).json()
    assert seen["raw_path"] == "/api/kbs/a%2Fb%20c" and seen["query"] == "q=%C3%A9"


def test_a_stream_from_the_main_process_arrives_part_by_part(main_socket: Path) -> None:
    async def check() -> list[str]:
        async with _client(SearchFront(_local, main_socket, 5)) as client, client.stream(
                "POST", "/api/chat/stream", json={}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            return [line async for line in response.aiter_lines() if line.startswith("data")]

    assert anyio.run(check) == ["data: 0", "data: 1", "data: 2"]


def test_an_unreachable_main_process_is_a_503_saying_so(tmp_path: Path) -> None:
    async def check() -> httpx.Response:
        async with _client(SearchFront(_local, tmp_path / "absent.sock", 1)) as client:
            return await client.post("/api/kbs", json={})

    response = anyio.run(check)
    assert response.status_code == 503
    assert response.json()["code"] == "main_process_unavailable"


def test_the_main_process_trusts_the_forwarded_address_only_from_its_unix_socket() -> None:
    seen: list[object] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope.get("client"))

    header = [(FORWARDED_FOR, b"198.51.100.2:80")]
    front = ForwardedClient(app)
    for client in (None, ("192.0.2.1", 5)):
        anyio.run(front, {"type": "http", "client": client, "headers": header}, None, None)
    assert seen == [("198.51.100.2", 80), ("192.0.2.1", 5)]
