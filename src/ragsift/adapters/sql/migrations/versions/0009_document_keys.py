"""Document keys (the same key again replaces the document), source mtimes, replacements.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add documents.doc_key (unique per KB), source_mtime and replacing_owner."""
    # Columns and a unique index, never a table rebuild: on SQLite rebuilding `documents`
    # would drop the old table, and ON DELETE CASCADE would take every chunk with it.
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("doc_key", sa.String(1024), nullable=True))
        batch.add_column(sa.Column("source_mtime", sa.Float(), nullable=True))
        batch.add_column(sa.Column("replacing_owner", sa.String(512), nullable=True))
    op.create_index("uq_documents_kb_id_doc_key", "documents", ["kb_id", "doc_key"],
                    unique=True)


def downgrade() -> None:
    """Drop what upgrade() added."""
    op.drop_index("uq_documents_kb_id_doc_key", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("replacing_owner")
        batch.drop_column("source_mtime")
        batch.drop_column("doc_key")
