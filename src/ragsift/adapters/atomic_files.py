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
