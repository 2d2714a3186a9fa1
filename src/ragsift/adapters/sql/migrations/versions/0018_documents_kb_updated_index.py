"""An index on documents (kb_id, updated_at): the filtered search's stamp (count and latest
updated_at of a KB's documents, metadata_repository.filter_stamp) reads it alone instead of
every document row.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = "ix_documents_kb_id_updated_at"


def upgrade() -> None:
    """Create the index."""
    op.create_index(_INDEX, "documents", ["kb_id", "updated_at"])


def downgrade() -> None:
    """Drop the index."""
    op.drop_index(_INDEX, table_name="documents")
