"""Chat API test helpers: a seeded data directory to copy, SSE parsing, a real uvicorn server."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from api.api_helpers import FIRMWARE, HOTELS, LEAVE
from api.conftest import open_api
from ragsift.api import create_app
from ragsift.bootstrap import Container

CHAT_FILES = {"hotels.md": HOTELS, "leave.md": LEAVE, "firmware.txt": FIRMWARE}
CHAT_MODEL = "qwen-test"

Event = tuple[str, dict[str, Any]]


def seed(data_dir: Path) -> dict[str, str]:
    """Ingest CHAT_FILES into KB "docs" of `data_dir`; {"kb": id, filename: document id}."""
    with open_api(data_dir) as api:
        kb_id = api.create_kb("docs")
        ids = api.ingest(kb_id, CHAT_FILES)
    return {"kb": kb_id, **dict(zip(CHAT_FILES, ids, strict=True))}


def copy_data(seeded: Path, target: Path) -> Path:
    """A private copy of a seeded data directory (cheaper than ingesting again)."""
    shutil.copytree(seeded, target)
    return target


def chat_settings(llm_url: str | None, **overrides: Any) -> dict[str, Any]:
    """Settings of a chat app: the model server (or none: extractive), no rewrite, top 3."""
    settings: dict[str, Any] = {"rewrite": False, "top_k": 3, **overrides}
    if llm_url is not None:
        settings.update(llm_base_url=f"{llm_url}/v1", chat_model=CHAT_MODEL)
    return settings


def parse_sse(text: str) -> list[Event]:
    """(event name, JSON data) of every event; each data must be a single line."""
    events: list[Event] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: "), block
        assert lines[1].startswith("data: "), block
        events.append((lines[0][len("event: "):], json.loads(lines[1][len("data: "):])))
    return events


@contextlib.contextmanager
def serving(container: Container) -> Iterator[str]:
    """The app over `container` under a real uvicorn server in a thread; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(container), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def wait_for(check: Any, timeout_s: float = 10.0, what: str = "condition") -> Any:
    """Poll `check()` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
