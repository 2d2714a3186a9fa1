"""Bring a database to the newest schema with the Alembic migrations shipped in this package."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine

from ragsift.adapters.sql.orm import make_engine

logger = logging.getLogger(__name__)

_HERE = Path(__file__).resolve().parent
MIGRATIONS_DIR = _HERE / "migrations"
ALEMBIC_INI = _HERE / "alembic.ini"


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    """An Alembic Config for the packaged migrations; `connection`, when given, is used as is."""
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolates '%', which URL-encoded passwords contain.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade_to_head(url: str, engine: Engine | None = None) -> None:
    """Apply every pending migration to the database at `url` (through `engine` when given)."""
    own_engine = engine is None
    active = make_engine(url) if engine is None else engine
    try:
        with active.connect() as connection:
            if connection.dialect.name == "sqlite":
                # Take the write lock before reading the schema version, so two processes
                # starting on a fresh file run the migrations one after the other, atomically.
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            command.upgrade(alembic_config(url, connection), "head")
            connection.commit()
    finally:
        if own_engine:
            active.dispose()
    logger.debug("database schema at head: %s", active.url.render_as_string(hide_password=True))
