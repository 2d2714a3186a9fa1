"""Fusion settings fitted to a knowledge base by `ragsift tune`.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the kb_fusion_tuning table."""
    op.create_table(
        "kb_fusion_tuning",
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("tuned", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_fusion_tuning_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("kb_id", name="pk_kb_fusion_tuning"),
    )


def downgrade() -> None:
    """Drop the kb_fusion_tuning table."""
    op.drop_table("kb_fusion_tuning")
