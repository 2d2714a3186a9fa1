"""The engine: SQLite gets foreign keys, WAL and a busy timeout on every connection."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Engine,
    create_engine,
    event,
)
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

SQLITE_BUSY_TIMEOUT_MS = 5000


def _is_sqlite_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets foreign keys, WAL and a busy timeout on every connection."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if _is_sqlite_memory(url):
        # One shared connection, otherwise every pooled connection sees its own empty database.
        engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            # WAL lets readers run while a writer commits; a no-op for in-memory databases.
            cursor.execute("PRAGMA journal_mode=WAL")
            # NORMAL is crash-safe under WAL; only a power loss can drop the last commits.
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    return engine
