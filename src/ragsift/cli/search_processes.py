"""`ragsift serve --search-processes N`: the sockets, the search processes and their keeper.

Python runs one thread of Python at a time, so one server process answers searches about as
fast at 8 concurrent requests as at 1. N more processes, each with its own interpreter, open
the data directory read-only (the embedded index follows the main process's writes) and
listen on the same address: SO_REUSEPORT lets the kernel spread incoming connections over
every process. They answer searches themselves and forward the rest to the main process
over a unix socket in the data directory (api/forward.py). A search process that dies is
started again; all of them die with the main process, however it ends.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

_RESTART_DELAY_S = (1.0, 30.0)  # first and longest wait before restarting a process


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port with SO_REUSEPORT, listening (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP, and
    # without it Nagle and delayed ACKs add ~40 ms to every small response
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def unix_socket(path: Path) -> socket.socket:
    """A listening unix socket at `path` that only this user may connect to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # a socket left by a process that was killed
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


_UNIX_PATH_MAX = 100  # sun_path holds 108 bytes on Linux


def main_socket_path(data_dir: Path) -> Path:
    """Where the main process listens for what its search processes forward: in the data
    directory, or the temporary directory when that path is too long for a unix socket."""
    path = data_dir.resolve() / "run" / f"serve-{os.getpid()}.sock"
    if len(os.fsencode(path)) <= _UNIX_PATH_MAX:
        return path
    return Path(tempfile.gettempdir()) / f"ragsift-{os.getuid()}-serve-{os.getpid()}.sock"


class SearchProcesses:
    """Keeps `count` search processes running `command` until `stop`."""

    def __init__(self, command: list[str], count: int) -> None:
        self._command = command
        self._count = count
        self._processes: list[subprocess.Popen[bytes]] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._keeper: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            self._processes = [self._spawn() for _ in range(self._count)]
        self._keeper = threading.Thread(target=self._keep, name="search-processes", daemon=True)
        self._keeper.start()
        logger.info("started %d search process(es) beside this one", self._count)

    def stop(self, timeout_s: float) -> None:
        """SIGTERM each (they finish their open requests), SIGKILL what is left at the end."""
        self._stopping.set()
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for process in processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning("search process %d did not stop in time; killed", process.pid)
                process.kill()
                process.wait()
        if self._keeper is not None:
            self._keeper.join(timeout=5)

    def _spawn(self) -> subprocess.Popen[bytes]:
        # stdout/stderr inherited: their log lines go where the main process's go. A session
        # of their own: a terminal's Ctrl-C reaches the main process, which stops them in
        # order (they die with it anyway: die_with_parent).
        return subprocess.Popen(self._command, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def _keep(self) -> None:
        delays = [_RESTART_DELAY_S[0]] * self._count
        while not self._stopping.wait(0.5):
            for i in range(self._count):
                with self._lock:
                    process = self._processes[i]
                    code = process.poll()
                    if code is None or self._stopping.is_set():
                        continue
                logger.warning("search process %d exited with %s; starting another in %.0f s",
                               process.pid, code, delays[i])
                if self._stopping.wait(delays[i]):
                    return
                delays[i] = min(delays[i] * 2, _RESTART_DELAY_S[1])
                with self._lock:
                    if not self._stopping.is_set():
                        self._processes[i] = self._spawn()


def search_process_command(host: str, port: int, data_dir: Path, main_socket: Path,
                           no_auth: bool) -> list[str]:
    """The command line of one search process of this server."""
    script = Path(sys.executable).with_name("ragsift")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "ragsift.cli"]
    return [*base, "serve", "--host", host, "--port", str(port), "--data-dir", str(data_dir),
            "--search-process-of", str(main_socket), *(["--no-auth"] if no_auth else [])]
