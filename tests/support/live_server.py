"""A real `ragsift serve` process for client tests, and API keys made with `ragsift keys`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.serve import free_port, ragsift_command, running


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
def serving(data_dir: Path, log: Path, *args: str, **env: str) -> Iterator[LiveServer]:
    """`ragsift serve ARGS` on a free loopback port with `env` added; stopped with SIGINT
    after (killed if it does not stop)."""
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(data_dir), *args]
    url = f"http://127.0.0.1:{port}"
    with running(command, log, url, {**os.environ, **env}):
        yield LiveServer(url=url, log=log, data_dir=data_dir)
