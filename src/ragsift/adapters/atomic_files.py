"""Whole-file writes that readers and crashes never see half done."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes, prefix: str, suffix: str = "") -> None:
    """`data` to `path` through a temporary file in its folder (fsynced), then a rename.

    The temporary file is named `prefix...suffix` so its owner can sweep what a killed
    process left behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def remove_stale_temporaries(folder: Path, pattern: str, older_than_s: float) -> int:
    """Remove the files matching `pattern` in `folder` last written over `older_than_s`
    seconds ago: what a writer killed midway left (kill -9 skips its clean-up); a write in
    progress elsewhere is younger. How many were removed."""
    import time

    cutoff = time.time() - older_than_s
    removed = 0
    for temp in folder.glob(pattern):
        with contextlib.suppress(OSError):
            if temp.is_file() and temp.stat().st_mtime < cutoff:
                temp.unlink()
                removed += 1
    return removed
