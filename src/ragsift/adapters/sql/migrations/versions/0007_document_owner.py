"""The process that works on an unfinished document (see ragsift.processes).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add documents.owner (NULL: no live process works on it)."""
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("owner", sa.String(512), nullable=True))


def downgrade() -> None:
    """Drop documents.owner."""
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("owner")
