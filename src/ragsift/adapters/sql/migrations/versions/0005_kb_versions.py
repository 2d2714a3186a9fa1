"""Knowledge-base versions and data scope of chunks.

Chunks get their version window (valid_from_seq, valid_to_seq; existing rows 0/0: valid in
every version, so data from before versions keeps being found), documents the roles that may
see them, and three tables hold each KB's version state, its sealed versions and the log of
activations. A KB without a state row has published nothing yet (active version 0).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _kb_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["kb_id"], ["knowledge_bases.id"], name=f"fk_{table}_kb_id_knowledge_bases",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    """Add the version window to chunks, roles to documents, and the version tables."""
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("valid_from_seq", sa.Integer(), nullable=False,
                                   server_default=sa.text("0")))
        batch.add_column(sa.Column("valid_to_seq", sa.Integer(), nullable=False,
                                   server_default=sa.text("0")))
    op.create_index("ix_chunks_kb_id_valid_to_seq", "chunks", ["kb_id", "valid_to_seq"])
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("allowed_roles", sa.JSON(), nullable=True))
    op.create_table(
        "kb_version_state",
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("active_seq", sa.Integer(), nullable=False),
        sa.Column("draft_seq", sa.Integer(), nullable=False),
        sa.Column("draft_changes", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("retention", sa.Integer(), nullable=False),
        sa.Column("gate", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        _kb_fk("kb_version_state"),
        sa.PrimaryKeyConstraint("kb_id", name="pk_kb_version_state"),
    )
    op.create_table(
        "kb_versions",
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("added", sa.Integer(), nullable=False),
        sa.Column("retired", sa.Integer(), nullable=False),
        _kb_fk("kb_versions"),
        sa.PrimaryKeyConstraint("kb_id", "seq", name="pk_kb_versions"),
    )
    op.create_table(
        "kb_activations",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("from_seq", sa.Integer(), nullable=False),
        sa.Column("to_seq", sa.Integer(), nullable=False),
        sa.Column("forced", sa.Boolean(), nullable=False),
        sa.Column("gate", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _kb_fk("kb_activations"),
        sa.PrimaryKeyConstraint("id", name="pk_kb_activations"),
    )
    op.create_index(
        "ix_kb_activations_kb_id_created_at", "kb_activations", ["kb_id", "created_at"]
    )


def downgrade() -> None:
    """Drop the version tables and columns (every KB keeps only its live chunks)."""
    op.drop_index("ix_kb_activations_kb_id_created_at", table_name="kb_activations")
    op.drop_table("kb_activations")
    op.drop_table("kb_versions")
    op.drop_table("kb_version_state")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("allowed_roles")
    # retired chunks belong to no live version: they go with the window columns
    op.execute(sa.text("DELETE FROM chunks WHERE valid_to_seq <> 0"))
    op.drop_index("ix_chunks_kb_id_valid_to_seq", table_name="chunks")
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("valid_to_seq")
        batch.drop_column("valid_from_seq")
