"""The packaged Alembic migrations build exactly the schema the ORM describes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from ragsift.adapters.sql import SqlRepository, upgrade_to_head
from ragsift.adapters.sql.orm import Base, make_engine

EXPECTED_TABLES = {"alembic_version", "knowledge_bases", "documents", "chunks", "faq_entries"}


def _tables(db_file: Path) -> set[str]:
    with sqlite3.connect(db_file) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {name for (name,) in rows}


def _diff(url: str, metadata: sa.MetaData) -> list[Any]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, metadata))
    finally:
        engine.dispose()


def test_upgrade_creates_every_table_in_an_empty_database(tmp_path: Path) -> None:
    db_file = tmp_path / "fresh.sqlite"
    upgrade_to_head(f"sqlite:///{db_file}")
    assert _tables(db_file) == EXPECTED_TABLES


def test_upgrade_twice_is_a_no_op_and_keeps_data(tmp_path: Path) -> None:
    db_file = tmp_path / "twice.sqlite"
    url = f"sqlite:///{db_file}"
    upgrade_to_head(url)
    with sqlite3.connect(db_file) as conn:
        conn.execute(
            "INSERT INTO knowledge_bases VALUES ('k', 'n', 'm', 3, '{}', '2024-01-01 00:00:00')"
        )
    upgrade_to_head(url)
    with sqlite3.connect(db_file) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("0002",)]
        assert conn.execute("SELECT id FROM knowledge_bases").fetchall() == [("k",)]


def test_repository_on_a_missing_file_creates_the_schema(tmp_path: Path) -> None:
    db_file = tmp_path / "new.sqlite"
    SqlRepository(f"sqlite:///{db_file}").close()
    assert _tables(db_file) == EXPECTED_TABLES


def test_migrated_schema_matches_the_orm_metadata_exactly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'diff.sqlite'}"
    upgrade_to_head(url)
    assert _diff(url, Base.metadata) == []


def test_schema_comparison_reports_a_missing_index(tmp_path: Path) -> None:
    # Proves the empty diff above is meaningful: a model change must show up.
    url = f"sqlite:///{tmp_path / 'changed.sqlite'}"
    upgrade_to_head(url)
    changed = sa.MetaData()
    for table in Base.metadata.tables.values():
        table.to_metadata(changed)
    sa.Index("ix_chunks_kb_id", changed.tables["chunks"].c.kb_id)
    diff = _diff(url, changed)
    assert [entry[0] for entry in diff] == ["add_index"]


def test_upgrade_can_run_on_a_shared_engine(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    engine = make_engine(url)
    try:
        upgrade_to_head(url, engine)
        with engine.connect() as connection:
            assert set(sa.inspect(connection).get_table_names()) == EXPECTED_TABLES
    finally:
        engine.dispose()


def test_sqlite_connections_enforce_foreign_keys_and_use_wal(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'pragmas.sqlite'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    finally:
        engine.dispose()


def test_in_memory_sqlite_keeps_one_database_across_calls() -> None:
    repo = SqlRepository("sqlite://")
    try:
        repo.ping()
        assert repo.list_kbs() == []
    finally:
        repo.close()
