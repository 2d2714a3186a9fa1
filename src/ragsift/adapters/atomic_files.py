"""Whole-file writes that readers and crashes never see half done."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_atomically(path: Path, data: bytes, prefix: str, suffix: str = "") -> None:
    """`data` to `path` through a temporary file in its folder (fsynced), then a rename.

    The temporary file is named `prefix...suffix` so its owner can sweep what a killed
    process left behind.
    """
    with replaced_atomically(path, prefix, suffix) as temp, open(temp, "wb") as handle:
        handle.write(data)


@contextmanager
def replaced_atomically(path: Path, prefix: str, suffix: str = "") -> Iterator[Path]:
    """A temporary file beside `path` (named `prefix...suffix`) for the caller to write and
    close; on success it is fsynced and renamed to `path`, on an error removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    os.close(fd)
    temp = Path(name)
    try:
        yield temp
        with open(temp, "rb") as handle:
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
