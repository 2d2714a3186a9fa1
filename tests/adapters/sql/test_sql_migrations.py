"""The packaged Alembic migrations build exactly the schema the ORM describes, on both backends."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from ragsift.adapters.sql import SqlRepository, upgrade_to_head
from ragsift.adapters.sql.migrate import MIGRATIONS_DIR
from ragsift.adapters.sql.orm import Base, make_engine

EXPECTED_TABLES = {"alembic_version", "knowledge_bases", "documents", "chunks", "faq_entries",
                   "kb_fusion_tuning", "ingest_jobs",
                   "kb_version_state", "kb_versions", "kb_activations",
                   "conversations", "conversation_turns", "api_keys", "audit_log", "assets",
                   "kb_settings", "query_history", "labelled_sets"}


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return set(sa.inspect(connection).get_table_names())
    finally:
        engine.dispose()


def _diff(url: str, metadata: sa.MetaData) -> list[Any]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, metadata))
    finally:
        engine.dispose()


def test_upgrade_creates_every_table_in_an_empty_database(db_url: str) -> None:
    upgrade_to_head(db_url)
    assert _tables(db_url) == EXPECTED_TABLES


def test_upgrade_twice_is_a_no_op_and_keeps_data(db_url: str) -> None:
    upgrade_to_head(db_url)
    kb = Base.metadata.tables["knowledge_bases"]
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(kb).values(
                id="k", name="n", embedding_model="m", embedding_dim=3, analyzer={},
                created_at=datetime(2024, 1, 1, tzinfo=UTC),
            ))
        upgrade_to_head(db_url)
        with engine.connect() as conn:
            head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).all() == [
                (head,)
            ]
            assert conn.execute(sa.text("SELECT id FROM knowledge_bases")).all() == [("k",)]
    finally:
        engine.dispose()


def test_repository_on_an_empty_database_creates_the_schema(db_url: str) -> None:
    # On SQLite the file does not exist yet; on PostgreSQL the database is empty.
    SqlRepository(db_url).close()
    assert _tables(db_url) == EXPECTED_TABLES


def test_migrated_schema_matches_the_orm_metadata_exactly(db_url: str) -> None:
    upgrade_to_head(db_url)
    assert _diff(db_url, Base.metadata) == []


def test_schema_comparison_reports_a_missing_index(db_url: str) -> None:
    # Proves the empty diff above is meaningful: a model change must show up.
    upgrade_to_head(db_url)
    changed = sa.MetaData()
    for table in Base.metadata.tables.values():
        table.to_metadata(changed)
    sa.Index("ix_chunks_kb_id", changed.tables["chunks"].c.kb_id)
    diff = _diff(db_url, changed)
    assert [entry[0] for entry in diff] == ["add_index"]


def test_upgrade_can_run_on_a_shared_engine(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        upgrade_to_head(db_url, engine)
        with engine.connect() as connection:
            assert set(sa.inspect(connection).get_table_names()) == EXPECTED_TABLES
    finally:
        engine.dispose()


# A service process at start-up: connect, wait for the go signal, migrate.
_STARTER = """
import sys, time
from pathlib import Path
from ragsift.adapters.sql import upgrade_to_head
from ragsift.adapters.sql.orm import make_engine
url, go = sys.argv[1], Path(sys.argv[2])
engine = make_engine(url)
engine.connect().close()
print("ready", flush=True)
while not go.exists():
    time.sleep(0.002)
upgrade_to_head(url, engine)
"""


def _died(starter: subprocess.Popen[str]) -> str:
    starter.kill()
    _, err = starter.communicate(timeout=30)
    return f"starter exited {starter.returncode} before connecting: {err[-2000:]}"


def test_concurrent_upgrades_of_an_empty_database_all_succeed(
    db_url: str, tmp_path: Path
) -> None:
    # Several service processes starting at once on a fresh database: the migrations run
    # once, under a lock (BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL); the
    # others wait for it and then find the schema at head.
    go = tmp_path / "go"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", _STARTER, db_url, str(go)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(3)
    ]
    try:
        for starter in starters:
            assert starter.stdout is not None
            line = starter.stdout.readline()
            # A starter that died before connecting says why (its stderr), not just "".
            assert line == "ready\n", _died(starter)
        go.touch()
        results = [starter.communicate(timeout=60) for starter in starters]
    finally:
        for starter in starters:
            starter.kill()
    failures = [err for starter, (_, err) in zip(starters, results, strict=True)
                if starter.returncode != 0]
    assert failures == []
    assert _tables(db_url) == EXPECTED_TABLES
    assert _diff(db_url, Base.metadata) == []


@pytest.mark.sqlite_only
def test_sqlite_connections_enforce_foreign_keys_and_use_wal(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'pragmas.sqlite'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    finally:
        engine.dispose()


@pytest.mark.sqlite_only
def test_in_memory_sqlite_keeps_one_database_across_calls() -> None:
    repo = SqlRepository("sqlite://")
    try:
        repo.ping()
        assert repo.list_kbs() == []
    finally:
        repo.close()


def test_opening_a_database_at_head_does_not_import_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    upgrade_to_head(url)
    code = ("import sys; from ragsift.adapters.sql import upgrade_to_head; "
            f"upgrade_to_head({url!r}); print('alembic' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_a_database_behind_head_is_still_upgraded(tmp_path: Path) -> None:
    from alembic import command

    from ragsift.adapters.sql.migrate import alembic_config

    url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    engine = make_engine(url)
    with engine.connect() as connection:  # a database of revision 0011
        command.upgrade(alembic_config(url, connection), "0011")
        connection.commit()
    engine.dispose()
    upgrade_to_head(url)
    inspector = sa.inspect(make_engine(url))
    assert "assets" in {c["name"] for c in inspector.get_columns("conversation_turns")}
    assert "ix_documents_kb_id_sha256" in {i["name"] for i in inspector.get_indexes("documents")}


def test_0013_keeps_every_document_and_chunk_and_lets_two_scopes_share_bytes(
    db_url: str,
) -> None:
    # a database of revision 0012 with a document and its chunk: on SQLite the documents
    # table is rebuilt, which with foreign keys on would cascade to the chunk
    from alembic import command

    from ragsift.adapters.sql.migrate import alembic_config

    engine = make_engine(db_url)
    moment = datetime(2024, 1, 1, tzinfo=UTC)
    try:
        with engine.connect() as connection:
            command.upgrade(alembic_config(db_url, connection), "0012")
            connection.commit()
        with engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO knowledge_bases (id, name, embedding_model, embedding_dim, "
                "analyzer, created_at) VALUES ('k', 'k', 'm', 3, '{}', :t)"), {"t": moment})
            connection.execute(sa.text(
                "INSERT INTO documents (id, kb_id, filename, media_type, sha256, size, status, "
                "tenant_id, metadata, created_at, updated_at, doc_key) VALUES ('d1', 'k', "
                "'hr.md', 'text/markdown', 'abc', 1, 'READY', 't1', '{}', :t, :t, 'hr.md')"),
                {"t": moment})
            connection.execute(sa.text(
                "INSERT INTO chunks (id, document_id, kb_id, level, ordinal, heading_path, "
                "locator, text, token_count) VALUES ('c1', 'd1', 'k', 0, 0, '[]', '{}', "
                "'leave', 1)"))
        upgrade_to_head(db_url, engine)
        with engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO documents (id, kb_id, filename, media_type, sha256, size, status, "
                "tenant_id, metadata, created_at, updated_at, doc_key) VALUES ('d2', 'k', "
                "'hr.md', 'text/markdown', 'abc', 1, 'READY', 't2', '{}', :t, :t, 't2/hr.md')"),
                {"t": moment})
            assert connection.execute(sa.text("SELECT id FROM chunks")).all() == [("c1",)]
            connection.execute(sa.text("DELETE FROM documents WHERE id = 'd1'"))
            # the chunk still belongs to its document: deleting that takes it along
            assert connection.execute(sa.text("SELECT id FROM chunks")).all() == []
            if connection.dialect.name == "sqlite":
                assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()
    assert _diff(db_url, Base.metadata) == []
