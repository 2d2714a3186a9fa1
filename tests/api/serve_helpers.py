"""A live `ragsift serve` with API keys on, over a data directory seeded in-process, and keys
made with the real `ragsift keys create` command."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from support.serve import free_port, ragsift_command, wait_healthy

SMALL_CHUNKS_ENV = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}


def create_key(data_dir: Path, name: str, *args: str, role: str = "reader") -> str:
    """`ragsift keys create --name NAME --role ROLE ARGS`: the secret it prints."""
    done = subprocess.run(
        [*ragsift_command(), "keys", "create", "--name", name, "--role", role, *args,
         "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    secret = done.stdout.strip()
    assert secret.startswith("rs_"), done.stdout
    return secret


@contextmanager
def serving_with_keys(data_dir: Path, log: Path, **env: str) -> Iterator[str]:
    """`ragsift serve` on a free loopback port with keys required; yields its base URL and
    stops it with SIGINT afterwards (killed if it does not stop)."""
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(data_dir)]
    with log.open("ab") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT,
            env={**os.environ, **SMALL_CHUNKS_ENV, "RAGSIFT_AUTH": "true", **env},
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base_url, timeout=10) as client:
            wait_healthy(client, process, log, timeout_s=90)
        yield base_url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
