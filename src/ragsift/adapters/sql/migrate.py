"""Bring a database to the newest schema with the Alembic migrations shipped in this package."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

from ragsift.adapters.sql.orm import make_engine

logger = logging.getLogger(__name__)

_HERE = Path(__file__).resolve().parent
MIGRATIONS_DIR = _HERE / "migrations"
ALEMBIC_INI = _HERE / "alembic.ini"

# Key of the PostgreSQL advisory lock held while migrating (any fixed bigint; this one is
# "ragsift" in ASCII). Advisory locks are per database, so other databases never wait.
MIGRATION_LOCK_KEY = 0x72_61_67_73_69_66_74


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    """An Alembic Config for the packaged migrations; `connection`, when given, is used as is."""
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


def upgrade_to_head(url: str, engine: Engine | None = None) -> None:
    """Apply every pending migration to the database at `url` (through `engine` when given)."""
    own_engine = engine is None
    active = make_engine(url) if engine is None else engine
    try:
        with active.connect() as connection:
            _lock_for_migrations(connection)
            command.upgrade(alembic_config(url, connection), "head")
            connection.commit()
    finally:
        if own_engine:
            active.dispose()
    logger.debug("database schema at head: %s", active.url.render_as_string(hide_password=True))
