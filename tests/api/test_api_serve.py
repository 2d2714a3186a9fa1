"""`ragsift serve` as a real process: health, upload, search over HTTP, clean shutdown, and a
SIGTERM mid-ingestion that exits within RAGSIFT_SHUTDOWN_TIMEOUT_S."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from api.api_helpers import HOTELS
from ragsift.bootstrap import build
from ragsift.cli.worker import PAUSE_HOOK
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from support.live_server import serving
from support.serve import free_port, ragsift_command, wait_healthy

SMALL = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}


def test_serve_answers_health_and_search_over_http(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    env = {**os.environ, "RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(tmp_path / "data")]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            wait_healthy(client, process, log, timeout_s=60)
            assert client.get("/readyz").json()["status"] == "ok"
            kb_id = client.post("/api/kbs", json={"name": "handbook"}).json()["id"]
            upload = client.post(f"/api/kbs/{kb_id}/documents",
                                 files={"files": ("hotels.md", HOTELS)})
            assert upload.status_code == 202, upload.text
            [document] = upload.json()["documents"]
            deadline = time.monotonic() + 30
            while client.get(f"/api/documents/{document['id']}").json()["status"] != "READY":
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)

            hits = client.post("/api/retrieval/search",
                               json={"kb": "handbook", "query": "hotel limit per night"}).json()

            assert hits[0]["document_id"] == document["id"]
            assert 'route="/api/retrieval/search"' in client.get("/metrics").text
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    assert process.returncode == 0, log.read_text()


@contextmanager
def serve_process(
    data_dir: Path, log: Path, env: dict[str, str]
) -> Iterator[tuple[subprocess.Popen[bytes], httpx.Client]]:
    """`ragsift serve` on a free port, healthy; killed if still running afterwards."""
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(data_dir)]
    with log.open("ab") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                   env={**os.environ, **SMALL, **env})
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            wait_healthy(client, process, log, timeout_s=60)
            yield process, client
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_sigterm_mid_ingestion_exits_within_the_bound_and_the_next_start_resumes(
    tmp_path: Path,
) -> None:
    data, log, bound_s = tmp_path / "data", tmp_path / "server.log", 3.0
    # the pause stands for a document that takes ten minutes to ingest
    env = {PAUSE_HOOK: "600", "RAGSIFT_SHUTDOWN_TIMEOUT_S": str(bound_s)}
    with serve_process(data, log, env) as (process, client):
        kb_id = client.post("/api/kbs", json={"name": "handbook"}).json()["id"]
        upload = client.post(f"/api/kbs/{kb_id}/documents", files={"files": ("hotels.md", HOTELS)})
        assert upload.status_code == 202, upload.text
        [document] = upload.json()["documents"]
        deadline = time.monotonic() + 60
        while "test hook: pausing" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)

        stopped_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        returncode = process.wait(timeout=bound_s + 30)  # without a bound: ten minutes
        took_s = time.monotonic() - stopped_at

    text = log.read_text()
    assert returncode == 0, text
    assert took_s < bound_s + 2, f"{took_s:.1f} s\n{text}"
    assert "abandoned 1 document(s) still being ingested" in text
    settings = Settings(data_dir=data, chunk_tokens=32, chunk_overlap_tokens=0)
    container = build(settings)
    try:
        left = container.repository.get_document(document["id"])
        assert left is not None and left.status == DocumentStatus.INDEXING
        assert container.repository.list_chunks(document["id"]) == []
    finally:
        container.close()

    with serve_process(data, log, {}) as (process, client):
        deadline = time.monotonic() + 60
        while (status := client.get(f"/api/documents/{document['id']}").json()["status"]) \
                != "READY":
            assert time.monotonic() < deadline, f"still {status}:\n{log.read_text()}"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()  # nothing left to abandon


def _health(connection: http.client.HTTPConnection) -> int:
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    response.read()
    return response.status


def test_an_idle_connection_stays_open_past_an_http_clients_reuse_window(
    tmp_path: Path,
) -> None:
    # httpx reuses an idle connection for up to 5 s; with uvicorn's own 5 s the server could
    # close it just as the client sent its next request ("Server disconnected without
    # sending a response"), which a client may not retry for a DELETE or POST.
    with serving(tmp_path / "data", tmp_path / "server.log", "--no-auth") as server:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        try:
            assert _health(connection) == 200
            first = connection.sock
            time.sleep((httpx.Limits().keepalive_expiry or 0.0) + 1.5)
            # a closed connection raises RemoteDisconnected here
            assert _health(connection) == 200, server.log.read_text()
            assert connection.sock is first
        finally:
            connection.close()
