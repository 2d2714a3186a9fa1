"""Helpers of the benchmarks that start a real `ragsift serve`: a free port, a health probe."""

from __future__ import annotations

import socket
import subprocess
import tarfile
import urllib.error
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def export_src(revision: str, into: Path) -> Path:
    """`revision`'s src under `into`, by git archive (the repository is only read)."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "src"], cwd=root,
                             check=True, capture_output=True).stdout
    into.mkdir(parents=True)
    (into / "src.tar").write_bytes(archive)
    with tarfile.open(into / "src.tar") as tar:
        tar.extractall(into, filter="data")
    return into / "src"

