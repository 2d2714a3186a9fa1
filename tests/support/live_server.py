"""A real `ragsift serve` process for client tests, and API keys made with `ragsift keys`."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from support.serve import free_port, ragsift_command, wait_healthy


@dataclass(frozen=True)
class LiveServer:
    """A running server: its base URL, its log and its data directory."""

    url: str
    log: Path
    data_dir: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def create_key(data_dir: Path, name: str, role: str, *args: str) -> str:
    """A new API key made with the CLI; the secret it prints once."""
    done = subprocess.run(
        [*ragsift_command(), "keys", "create", "--name", name, "--role", role, *args,
         "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@contextmanager
def serving(data_dir: Path, log: Path, **env: str) -> Iterator[LiveServer]:
    """`ragsift serve` on a free loopback port with `env` added; stopped with SIGINT after."""
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(data_dir)]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                   env={**os.environ, **env})
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=10) as probe:
            wait_healthy(probe, process, log, timeout_s=90)
        yield LiveServer(url=url, log=log, data_dir=data_dir)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
