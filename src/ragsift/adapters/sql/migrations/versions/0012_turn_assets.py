"""Chat turns record the images their answer shows.

Existing turns show no image (NULL); their evidence snapshots stay as they were stored.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add conversation_turns.assets."""
    with op.batch_alter_table("conversation_turns") as batch:
        batch.add_column(sa.Column("assets", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop what upgrade() added."""
    with op.batch_alter_table("conversation_turns") as batch:
        batch.drop_column("assets")
