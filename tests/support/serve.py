"""Starting real server processes in tests: a free local port and the `ragsift` command line."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def ragsift_command() -> list[str]:
    """The installed `ragsift` script beside this Python, else `python -m ragsift.cli`."""
    script = Path(sys.executable).with_name("ragsift")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ragsift.cli"]


def wait_healthy(
    client: httpx.Client, process: subprocess.Popen[bytes], log: Path, timeout_s: float
) -> None:
    """Poll /healthz until it answers 200; fail with the server's log if it exits or times out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"server exited {process.returncode}:\n{log.read_text()}"
        with contextlib.suppress(httpx.TransportError):
            if client.get("/healthz").status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"server never became healthy:\n{log.read_text()}")


@contextlib.contextmanager
def running(
    command: list[str], log: Path, base_url: str, env: dict[str, str], timeout_s: float = 90
) -> Iterator[subprocess.Popen[bytes]]:
    """A server process, healthy at `base_url`/healthz, stopped with SIGINT afterwards (killed
    if it does not stop); its output goes to `log`."""
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    try:
        with httpx.Client(base_url=base_url, timeout=10) as probe:
            wait_healthy(probe, process, log, timeout_s)
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
