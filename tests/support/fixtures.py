"""Start tests/support/llm_server.py as a real process and drive it from tests."""

from __future__ import annotations

import contextlib
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

SERVER_SCRIPT = Path(__file__).with_name("llm_server.py")


class LLMServer:
    """Handle on a running fake model server: its URL, its script and its last requests."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self._client = httpx.Client(base_url=self.url, timeout=5.0)

    def control(self, **sections: Any) -> None:
        """Script behaviour, e.g. control(chat={"mode": "stall", "stall_s": 3}) or
        control(faults={"rerank": {"status": 429, "retry_after": "1", "times": 2}})."""
        self._client.post("/_control", json=sections).raise_for_status()

    def reset(self) -> None:
        """Back to "ok" for everything, and forget recorded requests."""
        self._client.post("/_control", json={"reset": True}).raise_for_status()

    def last(self, kind: str) -> dict[str, Any]:
        """The last request of `kind` (chat, cohere, tei, dashscope): path, authorization, body."""
        recorded: dict[str, Any] = self._client.get("/_last").json()
        assert kind in recorded, f"server received no {kind} request; got {sorted(recorded)}"
        request: dict[str, Any] = recorded[kind]
        return request

    def attempts(self, group: str) -> list[dict[str, Any]]:
        """Requests of `group` (embeddings, chat, rerank) since its fault was scripted:
        [{"t": server monotonic seconds, "answer": status or "reset"}]."""
        recorded: dict[str, list[dict[str, Any]]] = self._client.get("/_attempts").json()
        return recorded[group]

    def embedding_log(self) -> dict[str, Any]:
        """Embeddings requests since the last reset: {"max_in_flight": n, "requests":
        [{"t", "done", "inputs", "tokens", "answer"}]} (see llm_server.py)."""
        log: dict[str, Any] = self._client.get("/_embedding_log").json()
        return log

    def last_kinds(self) -> list[str]:
        """The kinds of request received since the last reset."""
        return sorted(self._client.get("/_last").json())

    def close(self) -> None:
        self._client.close()


def _read_port(process: subprocess.Popen[bytes], deadline: float) -> int:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=0.1):
                line = process.stdout.readline().decode().strip()
                if line.startswith("PORT "):
                    return int(line.split()[1])
                if not line and process.poll() is not None:
                    break
    raise RuntimeError(f"fake model server did not report its port (exit {process.poll()})")


@contextlib.contextmanager
def run_llm_server(log_path: Path, startup_s: float = 15.0) -> Iterator[LLMServer]:
    """Run the server in a subprocess until the block ends; stderr goes to `log_path`."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT)], stdout=subprocess.PIPE, stderr=log
        )
        server: LLMServer | None = None
        try:
            deadline = time.monotonic() + startup_s
            try:
                server = LLMServer(_read_port(process, deadline))
                _wait_healthy(server, process, deadline)
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}; server log:\n{log_path.read_text()}") from exc
            yield server
        finally:
            if server is not None:
                server.close()
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
            if process.stdout is not None:
                process.stdout.close()


def _wait_healthy(server: LLMServer, process: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"fake model server exited with {process.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.url}/health", timeout=1.0).status_code == 200:
                return
        time.sleep(0.05)
    raise RuntimeError("fake model server never became healthy")
