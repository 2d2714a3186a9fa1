"""FAQ entries: question/answer pairs of a knowledge base, unique by content hash.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-15
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the faq_entries table."""
    op.create_table(
        "faq_entries",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_faq_entries_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_faq_entries"),
        sa.UniqueConstraint("kb_id", "sha256", name="uq_faq_entries_kb_id_sha256"),
    )


def downgrade() -> None:
    """Drop the faq_entries table."""
    op.drop_table("faq_entries")
