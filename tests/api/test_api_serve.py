"""`ragsift serve` as a real process: health, upload, search over HTTP, clean shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from api.api_helpers import HOTELS
from support.serve import free_port, ragsift_command, wait_healthy


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
