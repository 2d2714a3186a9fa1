"""The queries run on the debug page, kept per knowledge base (retrieval testing, issue 38)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class HistoryHit:
    """One returned chunk of a recorded query, with the score it was ranked by."""

    chunk_id: str
    score: float


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """A query as it was run: its text, the options sent, the top hits, the server's time and
    the key that ran it (None when auth is off)."""

    id: str
    kb_id: str
    query: str
    options: dict[str, Any] = field(default_factory=dict)
    hits: tuple[HistoryHit, ...] = ()
    latency_ms: float | None = None
    key_name: str | None = None
    created_at: datetime | None = None
