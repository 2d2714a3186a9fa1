"""Helpers of the benchmarks that start a real `ragsift serve`: a free port, a health probe,
waiting for it to be ready, the CPU of its process tree and stopping it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one live process; 0 once it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # exited meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) * TICK_S


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants (children listed per thread in /proc)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                pending += [int(c) for c in (task / "children").read_text().split()]
            except FileNotFoundError:
                continue
    return found


def process_tree_cpu(pid: int) -> float:
    """CPU seconds used by `pid` and its live descendants."""
    return sum(cpu_seconds(member) for member in process_tree(pid))


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


def wait_ready(process: subprocess.Popen[bytes], name: str, ready: Callable[[], bool],
               poll_s: float = 0.05, timeout_s: float = 120) -> None:
    """Poll `ready` until it holds; RuntimeError if the server exits or `timeout_s` passes."""
    start = time.perf_counter()
    while not ready():
        if process.poll() is not None or time.perf_counter() - start > timeout_s:
            raise RuntimeError(f"{name}: serve did not become healthy")
        time.sleep(poll_s)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL if it is not gone within 60 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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

