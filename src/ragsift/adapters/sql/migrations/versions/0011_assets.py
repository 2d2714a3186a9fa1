"""Images as assets: an assets table, the assets of each chunk, and documents' warnings.

Existing chunks name no asset (NULL) and existing documents have no warnings; `ragsift
reindex` re-parses stored originals and fills both.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create assets; add chunks.asset_ids and documents.warnings."""
    op.create_table(
        "assets",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kb_id", sa.String(64), nullable=False),
        sa.Column("document_id", sa.String(64),
                  sa.ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("media_type", sa.String(255), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("locator", sa.JSON(), nullable=False),
        sa.Column("caption", sa.Text(), nullable=False),
        sa.Column("ocr_text", sa.Text(), nullable=False),
    )
    op.create_index("ix_assets_document_id", "assets", ["document_id"])
    op.create_index("ix_assets_kb_id_sha256", "assets", ["kb_id", "sha256"])
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("asset_ids", sa.JSON(), nullable=True))
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("warnings", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop what upgrade() added."""
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("warnings")
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("asset_ids")
    op.drop_index("ix_assets_kb_id_sha256", "assets")
    op.drop_index("ix_assets_document_id", "assets")
    op.drop_table("assets")
