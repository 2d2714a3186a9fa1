"""Chat turns keep a user's feedback and their regenerated versions.

Existing turns are first versions (version 1, not superseded) without feedback.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the version and feedback columns of conversation_turns."""
    with op.batch_alter_table("conversation_turns") as batch:
        batch.add_column(sa.Column("version_of", sa.String(64), nullable=True))
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False,
                                   server_default="1"))
        batch.add_column(sa.Column("superseded", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column("feedback", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("feedback_rating", sa.String(8), nullable=True))
        batch.add_column(sa.Column("feedback_at", sa.DateTime(timezone=True), nullable=True))
        batch.create_index("ix_conversation_turns_feedback_at", ["feedback_at"])


def downgrade() -> None:
    """Drop what upgrade() added."""
    with op.batch_alter_table("conversation_turns") as batch:
        batch.drop_index("ix_conversation_turns_feedback_at")
        for column in ("feedback_at", "feedback_rating", "feedback", "superseded", "version",
                       "version_of"):
            batch.drop_column(column)
