"""A knowledge base's own settings, and the settings each sealed version was built with.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create kb_settings; add kb_versions.settings."""
    op.create_table(
        "kb_settings",
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("overrides", sa.JSON(), nullable=False),
        sa.Column("built", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_settings_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("kb_id", name="pk_kb_settings"),
    )
    with op.batch_alter_table("kb_versions") as batch:
        batch.add_column(sa.Column("settings", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop kb_versions.settings and kb_settings."""
    with op.batch_alter_table("kb_versions") as batch:
        batch.drop_column("settings")
    op.drop_table("kb_settings")
