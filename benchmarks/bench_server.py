"""Helpers of the benchmarks that start a real `ragsift serve`: a free port, a health probe."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request


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
