"""Labelled query sets saved with a knowledge base, for the evaluation view (issue 38).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create labelled_sets."""
    op.create_table(
        "labelled_sets",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("queries", sa.Integer(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("key_name", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_labelled_sets_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_labelled_sets"),
        sa.UniqueConstraint("kb_id", "name", name="uq_labelled_sets_kb_id_name"),
    )


def downgrade() -> None:
    """Drop labelled_sets."""
    op.drop_table("labelled_sets")
