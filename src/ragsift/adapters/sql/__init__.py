"""Relational store on SQLAlchemy: SQLite by default, PostgreSQL when configured."""

from ragsift.adapters.sql.migrate import upgrade_to_head
from ragsift.adapters.sql.repository import SqlRepository

__all__ = ["SqlRepository", "upgrade_to_head"]
