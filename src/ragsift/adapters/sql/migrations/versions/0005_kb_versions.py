"""Knowledge-base versions and data scope of chunks.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Placeholder in the chain; filled in by the change that needs it."""


def downgrade() -> None:
    """Placeholder in the chain."""
