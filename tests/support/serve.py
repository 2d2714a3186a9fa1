"""Starting real server processes in tests: a free local port and the `ragsift` command line."""

from __future__ import annotations

import socket
import sys
from pathlib import Path


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
