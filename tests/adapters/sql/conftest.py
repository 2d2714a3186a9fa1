"""Fixtures for the SQL repository tests: every test runs on SQLite and on PostgreSQL 15.

`db_url` is parametrized over both backends, so each test that uses it (directly or through
`repo`) runs twice: on a fresh SQLite file, and on a fresh database of a private PostgreSQL
server that the session starts on first use (see support/postgres.py). Tests marked
`sqlite_only` (PRAGMAs, SQLite query plans) get only the SQLite parameter, and those marked
`postgresql_only` (PostgreSQL query plans) only the PostgreSQL one.

Where the PostgreSQL binaries are absent the PostgreSQL cases are skipped with the reason;
with RAGSIFT_TEST_POSTGRES=require (set by .ci/run) they fail instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.sql import SqlRepository
from support.postgres import PostgresServer, postgres_or_skip

BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only: runs only on the SQLite backend (PRAGMAs, SQLite query plans)"
    )
    config.addinivalue_line(
        "markers", "postgresql_only: runs only on the PostgreSQL backend (its query plans)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_url" in metafunc.fixturenames:
        only = [b for b in BACKENDS if metafunc.definition.get_closest_marker(f"{b}_only")]
        metafunc.parametrize("db_url", only or BACKENDS, indirect=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    yield from postgres_or_skip()


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh, empty database on the backend of this test's parameter."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ragsift.sqlite'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    with server.fresh_database() as url:
        yield url


@pytest.fixture
def backend(db_url: str) -> str:
    """The name of this test's backend: 'sqlite' or 'postgresql'."""
    return db_url.split(":", 1)[0].split("+", 1)[0]


@pytest.fixture
def repo(db_url: str) -> Iterator[SqlRepository]:
    repository = SqlRepository(db_url)
    yield repository
    repository.close()
