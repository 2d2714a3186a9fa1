"""RAGSIFT_LOG_FORMAT=json: one JSON object per line, with the request id the trace carries."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.observability.context import bind_request_id
from ragsift.observability.logs import JsonFormatter
from support.serve import free_port, ragsift_command


def test_a_record_is_one_json_object_with_the_bound_request_id() -> None:
    bind_request_id("client-request-0001")
    record = logging.makeLogRecord({"name": "ragsift.test", "levelname": "WARNING",
                                    "msg": "disk %s", "args": ("full",), "kb": "docs"})
    line = JsonFormatter().format(record)
    payload = json.loads(line)
    assert payload["message"] == "disk full" and payload["level"] == "WARNING"
    assert payload["request_id"] == "client-request-0001"
    assert payload["kb"] == "docs"
    assert "\n" not in line


def test_serve_logs_json_lines_when_asked(tmp_path: Path) -> None:
    env = {**os.environ, "RAGSIFT_DATA_DIR": str(tmp_path / "data"),
           "RAGSIFT_LOG_FORMAT": "json"}
    command = [*ragsift_command(), "serve", "--no-auth", "--port", str(free_port())]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines: list[dict[str, object]] = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(json.loads(line))  # every line is one JSON object
            if "Uvicorn running" in str(lines[-1]["message"]):
                break
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert any("API keys are OFF" in str(line["message"]) and line["level"] == "WARNING"
               for line in lines)


@pytest.mark.parametrize("given", ["caller-chosen-id-42", None])
def test_the_api_returns_the_request_id_that_the_trace_carries(
    tmp_path: Path, given: str | None
) -> None:
    container = build(Settings(data_dir=tmp_path / "data", auth=False))
    try:
        kb = container.ingestion.ensure_kb("docs")
        container.ingestion.ingest_bytes(kb, "a.md", b"# A\n\nhotel limit 150 dollars\n")
        with TestClient(create_app(container)) as client:
            headers = {"X-Request-ID": given} if given else {}
            response = client.post("/api/retrieval/explain", headers=headers,
                                   json={"kb_id": kb.id, "query": "hotel limit"})
        assert response.status_code == 200
        returned = response.headers["x-request-id"]
        assert response.json()["trace"]["request_id"] == returned
        if given:
            assert returned == given
    finally:
        container.close()
