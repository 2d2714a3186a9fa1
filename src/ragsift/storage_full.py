"""A full disk wherever ragsift writes, recognised and told as one error (StorageFull).

Each store reports it its own way: an OSError with ENOSPC (the originals, the dense files),
SQLite's SQLITE_FULL "database or disk is full" (the facts, the embedding cache, often
wrapped by SQLAlchemy), PostgreSQL's SQLSTATE 53100, tantivy's ValueError carrying the
Rust io error's text ("No space left on device (os error 28)"). `is_storage_full` looks
through an exception and its causes for any of them; `StorageSpace` turns one into the
message a user can act on: where, how much is free, about how much was needed.
"""

from __future__ import annotations

import errno
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ragsift.domain.errors import StorageFull

SQLITE_FULL = 13  # sqlite3.Error.sqlite_errorcode (its low byte) for "database or disk is full"
PG_DISK_FULL = "53100"  # SQLSTATE disk_full
_NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# the texts of the same conditions where only text survives (tantivy, a re-raised error)
_NO_SPACE_TEXT = re.compile(
    r"database or disk is full|no space left on device|os error 28\b|disk quota exceeded"
    r"|could not extend file", re.IGNORECASE)
# SQLAlchemy appends "(Background on this error at: https://sqlalche.me/e/20/e3q8)"
_LIBRARY_LINK = re.compile(r"\s*\(Background on this error at: [^)]*\)|\s*https?://sqlalche\.me/\S*")
_MAX_CHAIN = 16  # causes followed; guards against cycles in __context__


def is_storage_full(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from or wraps, says the disk is full."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending and len(seen) < _MAX_CHAIN:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if _says_full(current):
            return True
        # SQLAlchemy keeps the driver's exception as .orig; Python chains the rest
        for inner in (getattr(current, "orig", None), current.__cause__, current.__context__):
            if isinstance(inner, BaseException):
                pending.append(inner)
    return False


def _says_full(exc: BaseException) -> bool:
    if isinstance(exc, StorageFull):
        return True
    if isinstance(exc, OSError) and exc.errno in _NO_SPACE_ERRNOS:
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == SQLITE_FULL:
        return True
    if PG_DISK_FULL in (getattr(exc, "sqlstate", None), getattr(exc, "pgcode", None)):
        return True
    return bool(_NO_SPACE_TEXT.search(str(exc)))


def _is_postgres(exc: BaseException) -> bool:
    return any(
        PG_DISK_FULL in (getattr(e, "sqlstate", None), getattr(e, "pgcode", None))
        for e in (exc, getattr(exc, "orig", None), exc.__cause__) if e is not None
    )


def without_library_links(text: str) -> str:
    """`text` without the documentation links libraries append (SQLAlchemy's sqlalche.me)."""
    return _LIBRARY_LINK.sub("", text)


def describe(exc: BaseException) -> str:
    """The usual failure text of an unexpected error, "Type: message", links removed."""
    return without_library_links(f"{type(exc).__name__}: {exc}")


def megabytes(size: int) -> str:
    return f"{max(size, 100_000) / 1e6:.1f} MB"


@dataclass(frozen=True, slots=True)
class StorageSpace:
    """The data directory a process writes under (None: unknown, as in a bare service)."""

    data_dir: Path | None = None

    def free_bytes(self) -> int | None:
        if self.data_dir is None:
            return None
        try:
            return shutil.disk_usage(self.data_dir).free
        except OSError:
            return None

    def error(self, exc: BaseException, needed: int | None = None) -> StorageFull:
        """The StorageFull to raise (or to record as a reason) for the full-disk error `exc`."""
        if isinstance(exc, StorageFull):
            return exc
        if _is_postgres(exc):
            return StorageFull("no space left on the PostgreSQL server's disk (SQLSTATE "
                               f"{PG_DISK_FULL}); free space there and run it again",
                               needed_bytes=needed)
        free = self.free_bytes()
        place = "the data directory" + (f" {self.data_dir}" if self.data_dir else "")
        facts = [f"needed ~{megabytes(needed)}"] if needed else []
        if free is not None:
            facts.append(f"{megabytes(free)} free" if free >= 100_000 else f"{free:,} bytes free")
        detail = f" ({', '.join(facts)})" if facts else ""
        return StorageFull(f"no space left on {place}{detail}; free some space and run it "
                           "again", needed_bytes=needed, free_bytes=free)

    def reason(self, exc: BaseException, needed: int | None = None) -> str:
        """A document's failure reason for `exc`: the no-space message when the disk is full,
        else the error's own text (without library links)."""
        return str(self.error(exc, needed)) if is_storage_full(exc) else describe(exc)


def log_failure(log: logging.Logger, exc: BaseException, message: str, *args: object) -> None:
    """Log a failed write: with its traceback, except a full disk (an expected condition that
    the reason already tells; a traceback would only bury it)."""
    if is_storage_full(exc):
        log.warning(message + ": %s", *args, describe(exc))
    else:
        log.error(message, *args, exc_info=exc)
