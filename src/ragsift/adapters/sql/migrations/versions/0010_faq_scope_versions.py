"""FAQ entries get the data scope of documents and the KB-version window of chunks.

Existing entries keep their scope empty (seen by every tenant, dataset, visibility and role)
and get the window 0/0 (valid in every version), so they keep being found as before. The
unique (kb_id, sha256) constraint becomes a plain index: a retired entry kept for older
versions and a live one may share a key; writers keep one live entry per key under the KB's
version-state lock.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add scope and window columns to faq_entries; the key constraint becomes an index."""
    with op.batch_alter_table("faq_entries") as batch:
        batch.add_column(sa.Column("tenant_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("dataset_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("visibility", sa.Text(), nullable=True))
        batch.add_column(sa.Column("allowed_roles", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("valid_from_seq", sa.Integer(), nullable=False,
                                   server_default=sa.text("0")))
        batch.add_column(sa.Column("valid_to_seq", sa.Integer(), nullable=False,
                                   server_default=sa.text("0")))
        batch.drop_constraint("uq_faq_entries_kb_id_sha256", type_="unique")
        batch.create_index("ix_faq_entries_kb_id_sha256", ["kb_id", "sha256"])


def downgrade() -> None:
    """Drop what upgrade() added; fails if two rows of a KB share a key (retired and live)."""
    with op.batch_alter_table("faq_entries") as batch:
        batch.drop_index("ix_faq_entries_kb_id_sha256")
        batch.create_unique_constraint("uq_faq_entries_kb_id_sha256", ["kb_id", "sha256"])
        batch.drop_column("valid_to_seq")
        batch.drop_column("valid_from_seq")
        batch.drop_column("allowed_roles")
        batch.drop_column("visibility")
        batch.drop_column("dataset_id")
        batch.drop_column("tenant_id")
