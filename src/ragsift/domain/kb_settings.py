"""What is stored of a knowledge base's own settings (ragsift/kb_settings.py reads it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class KbSettingsRecord:
    """A KB's overrides of the process settings, and the effective ingestion settings its
    documents were last built with in full (None: never recorded)."""

    kb_id: str
    overrides: dict[str, Any] = field(default_factory=dict)
    built: dict[str, Any] | None = None
    updated_at: datetime | None = None
