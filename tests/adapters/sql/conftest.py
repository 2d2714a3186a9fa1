"""Fixtures for the SQL repository tests: a fresh SQLite file per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.sql import SqlRepository


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ragsift.sqlite'}"


@pytest.fixture
def repo(db_url: str) -> Iterator[SqlRepository]:
    repository = SqlRepository(db_url)
    yield repository
    repository.close()
