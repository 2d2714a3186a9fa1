"""Which process works on a document, and whether that process still lives.

A document in PENDING, PARSING, INDEXING or DELETING carries its owner: the process that
accepted it or took it over, as `host/boot id/pid/start time`. A process that finds such a
document owned by a process that is gone (the pid is free, or reused by a process started at
another time, or the machine rebooted) takes it over: nobody else will ever finish it. An
owner on another host cannot be checked from here; those documents are left to their own
host (or to the job queue's leases, which expire).
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

_SEPARATOR = "/"


@dataclass(frozen=True, slots=True)
class Owner:
    """A process, identified so that a reused pid is told apart from the original."""

    host: str
    boot_id: str
    pid: int
    start_ticks: int

    def token(self) -> str:
        """The owner as stored in the facts."""
        return _SEPARATOR.join((self.host, self.boot_id, str(self.pid), str(self.start_ticks)))

    @classmethod
    def parse(cls, token: str) -> Owner | None:
        """The owner a stored token names, or None when it is not one."""
        parts = token.rsplit(_SEPARATOR, 3)
        if len(parts) != 4 or not parts[2].isdigit() or not parts[3].lstrip("-").isdigit():
            return None
        return cls(parts[0], parts[1], int(parts[2]), int(parts[3]))


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text("ascii", errors="replace").strip()
    except OSError:
        return None


@functools.cache
def _boot_id() -> str:
    return _read("/proc/sys/kernel/random/boot_id") or "-"


def _start_ticks(pid: int) -> int | None:
    """The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat)."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def this_process() -> Owner:
    """The calling process (computed per call: a forked child is another process)."""
    pid = os.getpid()
    return Owner(socket.gethostname(), _boot_id(), pid, _start_ticks(pid) or -1)


def is_dead(token: str | None) -> bool:
    """Whether the owner `token` names is certainly gone (None or garbage: nobody owns it).

    False for a live process and for an owner on another host, which cannot be checked here.
    """
    if token is None:
        return True
    owner = Owner.parse(token)
    if owner is None:
        return True
    me = this_process()
    if owner.host != me.host:
        return False
    if owner.boot_id != me.boot_id:
        return True  # the machine restarted since
    if owner.pid == me.pid:
        return owner.start_ticks != me.start_ticks
    started = _start_ticks(owner.pid)
    return started is None or started != owner.start_ticks


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux), however it dies."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
