"""Sealed KB versions keep their documents' metadata (issue 36).

`kb_versions.metadata`: document id -> its metadata (JSON form) when the version was sealed,
for the documents that had any; a search pinned to the version filters on it. Versions
sealed before this revision have NULL: they are filtered on the current metadata, as before.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add kb_versions.metadata."""
    with op.batch_alter_table("kb_versions") as batch:
        batch.add_column(sa.Column("metadata", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop what upgrade() added."""
    with op.batch_alter_table("kb_versions") as batch:
        batch.drop_column("metadata")
