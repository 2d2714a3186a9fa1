"""Alembic environment: runs ragsift's migrations on a given connection or on the configured URL."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from ragsift.adapters.sql.orm import Base, make_engine

config = context.config
target_metadata = Base.metadata


def _is_sqlite(connection: Connection) -> bool:
    return connection.dialect.name == "sqlite"


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=_is_sqlite(connection),
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _configured_url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    # Imported late: only the developer CLI path needs settings.
    from ragsift.config import Settings

    return Settings().resolved_database_url


def _run_offline() -> None:
    context.configure(
        url=_configured_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    shared = config.attributes.get("connection")
    if isinstance(shared, Connection):
        # Called from upgrade_to_head or a test: the caller owns the connection and its
        # transaction, and the application owns logging.
        _run(shared)
        return
    if config.config_file_name is not None:
        # Only the alembic CLI gets here; keep loggers that already exist.
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    engine = make_engine(_configured_url())
    try:
        with engine.begin() as connection:
            _run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    _run_offline()
else:
    _run_online()
