"""ObjectStore on a local directory: one file per key, written atomically."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
from pathlib import Path

from ragsift.adapters.atomic_files import write_atomically
from ragsift.domain.errors import NotFound

logger = logging.getLogger(__name__)

_TEMP_PREFIX = ".tmp-"


class LocalObjectStore:
    """Keeps originals under `root`; keys are relative slash paths like "kb/doc/filename"."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()
        self._root.mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        """The directory every key lives under."""
        return self._root

    def _path(self, key: str) -> Path:
        if not key or key.startswith("/") or "\\" in key or "\x00" in key:
            raise ValueError(f"invalid object key {key!r}: must be a relative slash path")
        parts = key.split("/")
        # ".." anywhere could climb out of root; "." and "" would alias other keys.
        if any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"invalid object key {key!r}: empty, '.' or '..' segment")
        path = self._root.joinpath(*parts)
        # A symlink inside root could still point outside it; with no "..", only a component
        # under root can be one. lstat-ing those is cheap, where resolving the whole path
        # (every component from /) cost ~0.4 ms per put or get of an ingest.
        if self._has_link(parts) and not path.resolve().is_relative_to(self._root):
            raise ValueError(f"invalid object key {key!r}: escapes the store")
        return path

    def _has_link(self, parts: list[str]) -> bool:
        """Whether a component of root/parts that exists is a symbolic link."""
        current = str(self._root)
        for part in parts:
            current = os.path.join(current, part)
            try:
                mode = os.lstat(current).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return False  # what does not exist holds no link further down either
            if stat.S_ISLNK(mode):
                return True
        return False

    def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there; readers never see half a file."""
        path = self._path(key)
        write_atomically(path, data, prefix=_TEMP_PREFIX)
        logger.debug("stored %d bytes at %s", len(data), key)

    def get(self, key: str) -> bytes:
        """The bytes stored under `key`; NotFound when there are none."""
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise NotFound(f"no stored object {key!r}") from exc

    def delete_prefix(self, prefix: str) -> None:
        """Remove the object `prefix` or every object under the folder `prefix`; absent is fine."""
        path = self._path(prefix.rstrip("/"))
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                path.unlink()
        logger.debug("deleted objects under %s", prefix)
