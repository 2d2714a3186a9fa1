"""A live `ragsift serve` with API keys on, over a data directory seeded in-process, and keys
made with the real `ragsift keys create` command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support import live_server

SMALL_CHUNKS_ENV = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}


def create_key(data_dir: Path, name: str, *args: str, role: str = "reader") -> str:
    """`ragsift keys create --name NAME --role ROLE ARGS`: the secret it prints."""
    secret = live_server.create_key(data_dir, name, role, *args)
    assert secret.startswith("rs_"), secret
    return secret


@contextmanager
def serving_with_keys(data_dir: Path, log: Path, **env: str) -> Iterator[str]:
    """`ragsift serve` on a free loopback port with keys required (small chunks); yields its
    base URL and stops it afterwards."""
    with live_server.serving(data_dir, log, **{**SMALL_CHUNKS_ENV, "RAGSIFT_AUTH": "true",
                                               **env}) as server:
        yield server.url
