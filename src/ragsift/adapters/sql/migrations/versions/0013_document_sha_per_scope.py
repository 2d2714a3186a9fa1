"""The same bytes may be documents of several access scopes: (kb_id, sha256) is no longer
unique, a plain index keeps the lookup.

Two tenants (datasets, visibility levels, role sets) may each hold a copy of one file; the
ingestion keeps one document per bytes and access scope (ingestion/registration.py), as
FAQ entries keep one per pair and scope (0010).

SQLite cannot drop a table constraint: the table is rebuilt from its own stored definition
less the constraint (copied, the old one dropped, the copy renamed). upgrade_to_head runs
migrations with foreign keys off on SQLite (its documented procedure for a rebuild), so the
drop does not cascade to the chunks, assets and jobs; with them on and documents stored,
this migration refuses rather than lose them.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from alembic import op
from sqlalchemy.engine import Connection

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CONSTRAINT = "uq_documents_kb_id_sha256"
_CLAUSE = f"CONSTRAINT {_CONSTRAINT} UNIQUE (kb_id, sha256)"
_INDEX = "ix_documents_kb_id_sha256"


def upgrade() -> None:
    """Drop the unique (kb_id, sha256) constraint; index the pair instead."""
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _rebuild_sqlite(bind, _without_clause)
    else:
        op.drop_constraint(_CONSTRAINT, "documents", type_="unique")
    op.create_index(_INDEX, "documents", ["kb_id", "sha256"])


def downgrade() -> None:
    """Restore the constraint; fails if two documents of a KB share their bytes."""
    op.drop_index(_INDEX, table_name="documents")
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _rebuild_sqlite(bind, lambda sql: re.sub(r"\n\)\s*$", f", \n\t{_CLAUSE}\n)", sql))
    else:
        op.create_unique_constraint(_CONSTRAINT, "documents", ["kb_id", "sha256"])


def _without_clause(sql: str) -> str:
    changed, count = re.subn(r",\s*" + re.escape(_CLAUSE), "", sql)
    if count != 1:
        raise RuntimeError(f"documents table without the expected {_CONSTRAINT}: {sql}")
    return changed


def _rebuild_sqlite(bind: Connection, rewrite: Callable[[str], str]) -> None:
    """`documents` recreated from its stored CREATE TABLE passed through `rewrite`."""
    if (bind.exec_driver_sql("PRAGMA foreign_keys").scalar()
            and bind.exec_driver_sql("SELECT 1 FROM documents LIMIT 1").first() is not None):
        raise RuntimeError("rebuilding documents with foreign keys on would delete every chunk; "
                           "migrate with ragsift (upgrade_to_head), which turns them off")
    create = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'documents'").scalar_one()
    indexes = list(bind.exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'documents' "
        "AND sql IS NOT NULL"))
    copy, count = re.subn(r"^CREATE TABLE \"?documents\"? \(", "CREATE TABLE _documents_0013 (",
                          rewrite(create))
    if count != 1:
        raise RuntimeError(f"unexpected documents table: {create}")
    bind.exec_driver_sql(copy)
    bind.exec_driver_sql("INSERT INTO _documents_0013 SELECT * FROM documents")
    bind.exec_driver_sql("DROP TABLE documents")  # its indexes go with it
    bind.exec_driver_sql("ALTER TABLE _documents_0013 RENAME TO documents")
    for _, sql in indexes:
        bind.exec_driver_sql(sql)
