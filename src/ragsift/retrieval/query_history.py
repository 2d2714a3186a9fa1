"""The query history of the debug page (retrieval testing, issue 38): what a recorded search
keeps, and the store it is kept in (the last RAGSIFT_QUERY_HISTORY_LIMIT per knowledge base)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Protocol

from ragsift.domain.query_history import HistoryHit, QueryRecord
from ragsift.domain.results import RetrievalResult

# the hits a record keeps: enough to compare with a later run, not the whole answer
KEPT_HITS = 20
# what a record's options leave out: the query and the KB have their own fields
_NOT_OPTIONS = frozenset({"query", "kb_id", "kb", "kbs"})


class QueryHistoryStore(Protocol):
    def record_query(self, record: QueryRecord, keep: int) -> None: ...

    def list_queries(self, kb_id: str, limit: int) -> tuple[list[QueryRecord], int]: ...

    def clear_queries(self, kb_id: str) -> int: ...


def final_score(hit: Any) -> float:
    """The score a hit is ranked by: rerank when it ran, else fused."""
    score = hit.rerank_score if hit.rerank_score is not None else hit.fusion_score
    return float(score)


def query_record(
    kb_id: str, query: str, options: dict[str, Any], result: RetrievalResult,
    key_name: str | None,
) -> QueryRecord:
    """The record of one search: its options as sent (None values left out), its top hits
    with their final scores, and the server's total time."""
    sent = {k: v for k, v in options.items() if v is not None and k not in _NOT_OPTIONS}
    hits = tuple(HistoryHit(hit.chunk_id, final_score(hit)) for hit in result.hits[:KEPT_HITS])
    total = result.trace.timings_ms.get("total")
    return QueryRecord(id=uuid.uuid4().hex, kb_id=kb_id, query=query, options=sent,
                       hits=hits, latency_ms=None if total is None else round(total, 3),
                       key_name=key_name, created_at=datetime.now(UTC))


def record(store: QueryHistoryStore, entry: QueryRecord, keep: int) -> bool:
    """Keep `entry` among its KB's newest `keep` queries; False when history is off (0)."""
    if keep <= 0:
        return False
    store.record_query(entry, keep)
    return True
