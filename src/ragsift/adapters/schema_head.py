"""The newest packaged schema revision, read from the migration files (no SQLAlchemy or
Alembic import): SqlRepository's migration check and the search's SQLite reader share it."""

from __future__ import annotations

import re
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent / "sql" / "migrations"
_REVISION = re.compile(r'^revision: str = "(\w+)"', re.MULTILINE)


def head_revision() -> str:
    """The newest packaged revision: ids are the zero-padded numbers that name the files."""
    revisions = []
    for path in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"):
        match = _REVISION.search(path.read_text(encoding="utf-8"))
        if match is not None:
            revisions.append(match.group(1))
    return max(revisions)
