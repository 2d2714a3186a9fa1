"""Hostile and excessive requests on a real uvicorn server: body limits and concurrency limits.

Requests the tests hold open are raw sockets that sent their headers and part of their body:
the app is running them (waiting for the rest), so each holds a slot of its route class. The
tests go on once /metrics counts them as running, so no request races another for a slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from api.api_helpers import HOTELS, SMALL_CHUNKS, assert_error
from api.chat_helpers import chat_settings, seed, serving, wait_for
from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings
from support.fixtures import LLMServer

LIMIT = 1024


@contextlib.contextmanager
def server(data_dir: Path, **settings: Any) -> Iterator[str]:
    """The app over a fresh container under uvicorn; its base URL."""
    container = build(Settings(data_dir=data_dir, **{**SMALL_CHUNKS, **settings}))
    try:
        with serving(container) as url:
            yield url
    finally:
        container.close()


def send_head(url: str, method: str, path: str, headers: dict[str, str],
              body: bytes = b"") -> socket.socket:
    """A raw connection that sent a request's headers and `body` (maybe only part of it)."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    head = f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    sock.sendall(head.encode() + body)
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and body of the response on `sock`."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)  # times out (10 s) if the server waits for more body
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def assert_too_large(status: int, body: bytes) -> None:
    assert status == 413
    error = json.loads(body)
    assert error["code"] == "request_too_large" and str(LIMIT) in error["message"]


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose JSON bodies may carry LIMIT bytes."""
    with server(tmp_path_factory.mktemp("limited") / "data", max_json_bytes=LIMIT) as url:
        yield url


def test_a_json_body_of_the_limit_is_read_and_one_byte_more_is_413(limited: str) -> None:
    fitting = json.dumps({"name": "fits"}).encode().ljust(LIMIT)  # JSON allows the spaces
    with httpx.Client(base_url=limited, timeout=10) as client:
        created = client.post("/api/kbs", content=fitting,
                              headers={"content-type": "application/json"})
        assert created.status_code == 201, created.text

        over = client.post("/api/kbs", content=fitting + b" ",
                           headers={"content-type": "application/json"})
    assert_error(over, 413, "request_too_large")


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(
    limited: str,
) -> None:
    with contextlib.closing(send_head(limited, "POST", "/api/retrieval/search", {
        "content-type": "application/json", "content-length": str(50 * 1024 * 1024),
    })) as sock:
        status, _, body = read_response(sock)  # no byte of the 50 MiB was sent
    assert_too_large(status, body)


def test_a_chunked_body_is_refused_once_it_passes_the_limit_without_its_end(
    limited: str,
) -> None:
    piece = b"x" * 300
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(4))  # 1200 bytes
    with contextlib.closing(send_head(limited, "POST", "/api/kbs", {
        "content-type": "application/json", "transfer-encoding": "chunked",
    }, chunks)) as sock:  # the terminating chunk is never sent
        status, _, body = read_response(sock)
    assert_too_large(status, body)


def test_a_multipart_upload_is_not_held_to_the_json_limit(limited: str) -> None:
    with httpx.Client(base_url=limited, timeout=30) as client:
        kb_id = client.post("/api/kbs", json={"name": "uploads"}).json()["id"]
        big = HOTELS * (4 * LIMIT // len(HOTELS) + 1)
        upload = client.post(f"/api/kbs/{kb_id}/documents", files={"files": ("big.md", big)})
        assert upload.status_code == 202, upload.text

        # multipart sent to a JSON route is read whole there: the limit holds
        elsewhere = client.post("/api/kbs", files={"files": ("big.md", big)})
    assert_error(elsewhere, 413, "request_too_large")


def test_a_chunked_body_is_not_read_past_the_chunk_that_passes_the_limit(
    tmp_path: Path,
) -> None:
    container = build(Settings(data_dir=tmp_path / "data", max_json_bytes=LIMIT))
    sent: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for i in range(100):
            sent.append(i)
            yield b"x" * 256

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(container))
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            return await client.post("/api/kbs", content=body(),
                                     headers={"content-type": "application/json"})

    try:
        response = asyncio.run(post())
    finally:
        container.close()

    assert_error(response, 413, "request_too_large")
    assert len(sent) == LIMIT // 256 + 1  # 1280 bytes: the fifth chunk passed the limit


def running(client: httpx.Client, route_class: str) -> int:
    """Requests of `route_class` the server runs now, from its /metrics."""
    text = client.get("/metrics").text
    found = re.search(rf'^ragsift_http_requests_running{{route_class="{route_class}"}} (\S+)$',
                      text, re.MULTILINE)
    assert found, text
    return int(float(found.group(1)))


def wait_running(client: httpx.Client, route_class: str, count: int) -> None:
    wait_for(lambda: running(client, route_class) == count,
             what=f"{count} {route_class} request(s) running")


@contextlib.contextmanager
def held(client: httpx.Client, route_class: str, path: str, content_type: str,
         first_bytes: bytes) -> Iterator[None]:
    """A request that sent part of its body and waits for the rest, until the block ends."""
    before = running(client, route_class)
    sock = send_head(str(client.base_url), "POST", path, {
        "content-type": content_type, "content-length": "100000"}, first_bytes)
    try:
        wait_running(client, route_class, before + 1)
        yield
    finally:
        sock.close()
        wait_running(client, route_class, before)  # the server saw it go and freed its slot


def assert_overloaded(response: httpx.Response, retry_after_s: int) -> None:
    assert_error(response, 503, "overloaded")
    assert response.headers["retry-after"] == str(retry_after_s)


def test_search_beyond_its_limit_is_503_with_retry_after_until_a_slot_frees(
    tmp_path: Path,
) -> None:
    with server(tmp_path / "data", max_concurrent_search=2, overload_retry_after_s=7) as url, \
            httpx.Client(base_url=url, timeout=10) as client:
        kb_id = client.post("/api/kbs", json={"name": "docs"}).json()["id"]

        def search() -> httpx.Response:
            return client.post("/api/retrieval/search", json={"kb_id": kb_id, "query": "hotel"})

        partial = b'{"kb_id": '
        with held(client, "search", "/api/retrieval/search", "application/json", partial):
            assert search().status_code == 200  # one of two slots taken
            with held(client, "search", "/api/retrieval/explain", "application/json", partial):
                assert_overloaded(search(), 7)
                assert_overloaded(search(), 7)  # refusals take no slot
                # other route classes have slots of their own
                assert client.get(f"/api/kbs/{kb_id}").status_code == 200
            # the slot is free again once its request has gone away
            assert search().json() == []
        assert running(client, "search") == 0


def test_uploads_beyond_their_limit_are_503_for_documents_and_faq_alike(
    tmp_path: Path,
) -> None:
    boundary = "b0undary"
    multipart = f"multipart/form-data; boundary={boundary}"
    first_part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
                  f"filename=\"slow.md\"\r\n\r\n# Slow\n").encode()
    with server(tmp_path / "data", max_concurrent_uploads=1) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        kb_id = client.post("/api/kbs", json={"name": "docs"}).json()["id"]
        faq = ("faq.jsonl", b'{"question": "Hotel limit?", "answer": "150 dollars"}\n')

        def import_faq() -> httpx.Response:
            return client.post(f"/api/kbs/{kb_id}/faq", files={"file": faq})

        with held(client, "upload", f"/api/kbs/{kb_id}/documents", multipart, first_part):
            assert_overloaded(import_faq(), 1)
            upload = client.post(f"/api/kbs/{kb_id}/documents",
                                 files={"files": ("hotels.md", HOTELS)})
            assert_overloaded(upload, 1)
            assert client.post("/api/retrieval/search", json={
                "kb_id": kb_id, "query": "hotel"}).status_code == 200

        imported = import_faq()
        assert imported.status_code == 200, imported.text
        assert imported.json()["added"] == 1


def _first_delta(lines: Iterator[str]) -> None:
    for line in lines:
        if line == "event: delta":
            return
    raise AssertionError("the stream ended before its first delta")


def test_a_chat_stream_holds_its_slot_until_the_stream_ends(
    tmp_path: Path, llm_server: LLMServer,
) -> None:
    data = tmp_path / "data"
    seed(data)
    # 200 pieces 50 ms apart: the stream lasts 10 s unless it is closed
    llm_server.control(chat={"answer": "x" * 800, "chunk_chars": 4, "delay_s": 0.05})
    question = {"kb": "docs", "message": "hotel limit per night?"}
    with server(data, max_concurrent_chat=1, **chat_settings(llm_server.url)) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/api/chat/stream", json=question) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()  # kept: dropping it would close the connection
            _first_delta(lines)

            assert_overloaded(client.post("/api/chat/stream", json=question), 1)
            assert_overloaded(client.post("/api/chat", json=question), 1)
            assert client.post("/api/retrieval/search", json={
                "kb": "docs", "query": "hotel"}).status_code == 200
            assert running(client, "chat") == 1
            assert next(lines).startswith("data: ")  # the first stream is still going
        # the stream is closed here, mid-answer: its slot goes once the turn is cancelled
        wait_running(client, "chat", 0)

        llm_server.control(chat={"answer": "Short."})
        answered = client.post("/api/chat", json=question)
        assert answered.status_code == 200, answered.text
        assert answered.json()["answer"] == "Short."
