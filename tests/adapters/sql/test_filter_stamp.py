"""filter_stamp, asked before every metadata-filtered search: on a SQLite file it reads the
documents again only after a commit (change_probe.py), and still sees every change at once,
whether made through this repository or through another connection (another process)."""

from __future__ import annotations

from typing import Any

import pytest
from sql_factories import make_document, make_kb
from sqlalchemy import event

from ragsift.adapters.sql import SqlRepository


def _statements(repository: SqlRepository) -> list[str]:
    seen: list[str] = []

    @event.listens_for(repository._engine, "before_cursor_execute")
    def _count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    return seen


@pytest.mark.sqlite_only
def test_an_unchanged_sqlite_database_answers_the_stamp_without_a_query(db_url: str) -> None:
    repository = SqlRepository(db_url)
    try:
        repository.create_kb(make_kb())
        repository.add_document(make_document("doc1"))
        first = repository.filter_stamp("kb1")
        seen = _statements(repository)
        assert repository.filter_stamp("kb1") == first
        assert seen == []
    finally:
        repository.close()


def test_the_stamp_changes_with_every_change_of_the_documents(db_url: str) -> None:
    """Through this repository and through a second one on the same database (a second
    connection, as another process), each change is seen by the next call."""
    repository, other = SqlRepository(db_url), SqlRepository(db_url)
    try:
        repository.create_kb(make_kb())
        repository.add_document(make_document("doc1"))
        stamps = [repository.filter_stamp("kb1")]
        repository.set_metadata("doc1", {"dept": "hr"})
        stamps.append(repository.filter_stamp("kb1"))
        other.set_metadata("doc1", {"dept": "it"})
        stamps.append(repository.filter_stamp("kb1"))
        other.add_document(make_document("doc2"))
        stamps.append(repository.filter_stamp("kb1"))
        assert len(set(stamps)) == 4
        assert repository.filter_stamp("kb1") == stamps[-1]
    finally:
        other.close()
        repository.close()


def test_a_database_outside_a_file_has_no_probe() -> None:
    repository = SqlRepository("sqlite://")
    try:
        repository.create_kb(make_kb())
        repository.add_document(make_document("doc1"))
        before = repository.filter_stamp("kb1")
        repository.set_metadata("doc1", {"dept": "hr"})
        assert repository.filter_stamp("kb1") != before
        assert repository._change_probe() is None
    finally:
        repository.close()


@pytest.mark.sqlite_only
def test_the_stamp_query_reads_the_kb_updated_at_index_not_the_document_rows(
    db_url: str,
) -> None:
    repository = SqlRepository(db_url)
    try:
        repository.create_kb(make_kb())
        repository.add_document(make_document("doc1"))
        asked: list[tuple[str, Any]] = []

        @event.listens_for(repository._engine, "before_cursor_execute")
        def _keep(_conn: Any, _cursor: Any, statement: str, parameters: Any,
                  *_args: Any) -> None:
            asked.append((statement, parameters))

        repository.filter_stamp("kb1")  # first call: no stamp kept yet, so it queries
        (statement, parameters), = [a for a in asked if "max(" in a[0].lower()]
        with repository._engine.connect() as connection:
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}",
                                              parameters).all()
        details = " | ".join(str(row[-1]) for row in plan)
        assert "COVERING INDEX ix_documents_kb_id_updated_at" in details, details
    finally:
        repository.close()
