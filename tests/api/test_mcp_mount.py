"""/mcp on the API app (issue 37 item 6): the mount survives an app whose lifespan starts again."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "test", "version": "0"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_mcp_answers_after_the_apps_lifespan_starts_a_second_time(tmp_path: Path) -> None:
    # the SDK's session manager runs once per instance: a second lifespan (a test client
    # entered again, an app embedded twice) must not fail start-up
    container = build(Settings(data_dir=tmp_path / "data", auth=False))
    try:
        app = create_app(container)
        for _ in range(2):
            with TestClient(app) as client:
                answer = client.post("/mcp", json=INITIALIZE, headers=HEADERS)
                assert answer.status_code == 200, answer.text
                assert "serverInfo" in answer.text
    finally:
        container.close()
