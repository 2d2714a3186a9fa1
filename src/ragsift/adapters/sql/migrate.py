"""Bring a database to the newest schema with the Alembic migrations shipped in this package."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

from ragsift.adapters.schema_head import MIGRATIONS_DIR, head_revision
from ragsift.adapters.sql.orm import make_engine

if TYPE_CHECKING:
    from alembic.config import Config

logger = logging.getLogger(__name__)

_HERE = Path(__file__).resolve().parent
ALEMBIC_INI = _HERE / "alembic.ini"

# Key of the PostgreSQL advisory lock held while migrating (any fixed bigint; this one is
# "ragsift" in ASCII). Advisory locks are per database, so other databases never wait.
MIGRATION_LOCK_KEY = 0x72_61_67_73_69_66_74


def at_head(connection: Connection) -> bool:
    """The schema is at the newest revision already (one cheap read, no Alembic import)."""
    if not inspect(connection).has_table("alembic_version"):
        return False
    versions = [row[0] for row in connection.execute(text(
        "SELECT version_num FROM alembic_version"))]
    return versions == [head_revision()]


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    """An Alembic Config for the packaged migrations; `connection`, when given, is used as is."""
    from alembic.config import Config

    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolates '%', which URL-encoded passwords contain.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _lock_for_migrations(connection: Connection) -> None:
    """Serialise migrations across processes for the rest of `connection`'s transaction.

    Taken before the schema version is read, so processes starting together on a fresh
    database run the migrations one after the other: the first migrates, the others wait
    and then find the schema at head.
    """
    dialect = connection.dialect.name
    if dialect == "sqlite":
        # The database write lock, held until commit.
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    elif dialect == "postgresql":
        # Released by the commit (or rollback) that ends the migration transaction; DDL is
        # transactional on PostgreSQL, so the waiting processes see all of it or none.
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
        )


@contextmanager
def _foreign_keys_off(connection: Connection) -> Iterator[None]:
    """On SQLite, foreign keys unenforced while migrating (outside any transaction: the
    pragma is a no-op inside one), as SQLite's procedure for rebuilding a table asks: a
    rebuild drops the old table, which would cascade to its children (0013)."""
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        if sqlite:
            connection.rollback()  # nothing uncommitted is left by then; the pragma needs it
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")


def _check_foreign_keys(connection: Connection) -> None:
    """Before the commit: a migration run with foreign keys off left none dangling."""
    if connection.dialect.name == "sqlite":
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
        if broken:
            raise RuntimeError(f"migrating left rows without their parent: {broken[:5]}")


def upgrade_to_head(url: str, engine: Engine | None = None) -> None:
    """Apply every pending migration to the database at `url` (through `engine` when given)."""
    own_engine = engine is None
    active = make_engine(url) if engine is None else engine
    try:
        with active.connect() as connection:
            # Alembic costs ~0.25 CPU-s to import: most opens find the schema current
            current = at_head(connection)
            connection.rollback()
            if current:
                return
            from alembic import command

            with _foreign_keys_off(connection):
                _lock_for_migrations(connection)
                command.upgrade(alembic_config(url, connection), "head")
                _check_foreign_keys(connection)
                connection.commit()
    finally:
        if own_engine:
            active.dispose()
    logger.debug("database schema at head: %s", active.url.render_as_string(hide_password=True))
