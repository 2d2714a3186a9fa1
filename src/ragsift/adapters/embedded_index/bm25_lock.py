"""The embedded store's lock file: one writing process per data directory."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ragsift.adapters.embedded_index.bm25_layout import LOCK_FILE, IndexInUse
from ragsift.processes import is_dead, this_process


def lock_root(root: Path, wait_s: float = 5.0) -> int:
    """Take the store's exclusive lock (released by `unlock_root` or when the process dies).

    The holder writes its identity into the lock file. A lock whose holder is gone is only
    held by its dying preparation workers (the kernel kills them with their parent, see
    ingestion/preparation.py) for a moment: that is waited for, up to `wait_s`; a live
    holder is refused at once.
    """
    deadline = time.monotonic() + wait_s
    while True:
        fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # flock locks belong to the open file description, so a second open in this
            # same process is refused too, like a second tantivy writer was.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            if is_dead(holder) and holder is not None and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            raise IndexInUse(
                f"the index in {root} is open in another ragsift process; the embedded "
                "backend allows one writing process per data directory (stop the other one, "
                "write through it, or use another --data-dir; commands that only read, such "
                "as search, listings and mcp, run beside it)"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, this_process().token().encode("utf-8"), 0)
        return fd


def _read_holder(fd: int) -> str | None:
    try:
        return os.pread(fd, 1024, 0).decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def unlock_root(fd: int) -> None:
    """Release the lock taken by `lock_root`."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
