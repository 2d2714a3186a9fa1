"""Whether a SQLite database may have changed since a value was read from it, in microseconds.

A metadata filter checks each search whether the KB's documents changed (filter_stamp): a count
and the latest `updated_at` of the KB's documents, which read every document row (4.7 ms of CPU
at 10,000 documents, more than half of an unfiltered hybrid search at 100k chunks:
docs/benchmarks.md, issue 36; since 0018 an index on (kb_id, updated_at) answers it: 1.8 ms
instead of 6.4 ms at 10,000 documents, still per search). SQLite's `PRAGMA data_version` on a
connection changes whenever any other connection commits to the database, in this process or
another; this probe's own connection never writes, so an unchanged value means no commit
anywhere since, and a value read from the database then is still current. Any commit (to any
table) changes it, so the caller reads the value again after every write, as before: never a
stale answer.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path

from sqlalchemy import Engine


class SqliteChangeProbe:
    """A read-only connection of its own to one SQLite file, asked only `data_version`."""

    def __init__(self, path: Path) -> None:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        self._connection = sqlite3.connect(uri, uri=True, check_same_thread=False,
                                           isolation_level=None)
        self._lock = threading.Lock()
        weakref.finalize(self, self._connection.close)

    def version(self) -> int:
        """Changes whenever another connection committed since the last call."""
        with self._lock:
            row = self._connection.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def probe_for(engine: Engine) -> SqliteChangeProbe | None:
    """A probe for an engine on a SQLite file; None for other databases and in-memory ones
    (asked the full question every time)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        return None
    path = Path(database)
    return SqliteChangeProbe(path) if path.exists() else None
