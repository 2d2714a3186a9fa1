"""Whole-file writes that readers and crashes never see half done."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

# a temporary file or folder this old belongs to no write still running
STALE_TEMPORARY_S = 3600.0


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


@contextmanager
def staging_folder(beside: Path) -> Iterator[Path]:
    """A temporary folder beside `beside`, named `<its name>.*.tmp` (what
    remove_stale_temporaries sweeps after a kill), removed on exit with what is left in it."""
    beside.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=beside.name + ".", suffix=".tmp", dir=beside.parent))
    try:
        yield temp
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def replace_in_order(moves: Sequence[tuple[Path, Path]]) -> None:
    """Each staged file of `moves` fsynced, then renamed onto its target in order: a kill
    midway leaves the last target, the one readers look for, unwritten."""
    for staged, _ in moves:
        with open(staged, "rb") as handle:
            os.fsync(handle.fileno())
    for staged, target in moves:
        os.replace(staged, target)


def remove_stale_temporaries(folder: Path, pattern: str,
                             older_than_s: float = STALE_TEMPORARY_S) -> int:
    """Remove the files and folders matching `pattern` in `folder` last written over
    `older_than_s` seconds ago: what a writer killed midway left (kill -9 skips its clean-up);
    a write in progress elsewhere is younger. How many were removed."""
    import shutil
    import time

    cutoff = time.time() - older_than_s
    removed = 0
    for temp in folder.glob(pattern):
        with contextlib.suppress(OSError):
            if temp.stat().st_mtime < cutoff:
                if temp.is_dir():
                    shutil.rmtree(temp)
                else:
                    temp.unlink()
                removed += 1
    return removed
