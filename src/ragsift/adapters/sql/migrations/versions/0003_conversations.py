"""Conversations and their turns (chat history with the evidence snapshot and trace).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Placeholder in the chain; filled in by the change that needs it."""


def downgrade() -> None:
    """Placeholder in the chain."""
