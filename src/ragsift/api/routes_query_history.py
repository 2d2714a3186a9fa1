"""The debug page's query history over HTTP (retrieval testing, issue 38).

A search is recorded by `POST /api/retrieval/explain?history=true` (what the debug page
sends); these routes list and clear a KB's records. A key reaches a KB's history exactly when
it may search the KB (the `{kb_id}` in the path is checked like every other).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ragsift.api.deps import State, require_kb
from ragsift.api.errors import ERROR_RESPONSES
from ragsift.domain.query_history import QueryRecord

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"], responses=ERROR_RESPONSES)


class HistoryHitOut(BaseModel):
    chunk_id: str
    score: float


class QueryRecordOut(BaseModel):
    """A recorded search: the query, the options sent, the top hits (ranked, with the score
    they were ranked by), the server's total time, the key that ran it (null: auth off)."""

    id: str
    kb_id: str
    query: str
    options: dict[str, Any]
    hits: list[HistoryHitOut]
    latency_ms: float | None
    key_name: str | None
    created_at: datetime | None


class QueryHistoryPage(BaseModel):
    """The newest records first; `total`: how many the KB keeps; `keep`: the bound
    (RAGSIFT_QUERY_HISTORY_LIMIT, 0: history off)."""

    total: int
    keep: int
    items: list[QueryRecordOut]


class ClearedOut(BaseModel):
    deleted: int


def record_out(record: QueryRecord) -> QueryRecordOut:
    return QueryRecordOut(
        id=record.id, kb_id=record.kb_id, query=record.query, options=record.options,
        hits=[HistoryHitOut(chunk_id=h.chunk_id, score=h.score) for h in record.hits],
        latency_ms=record.latency_ms, key_name=record.key_name, created_at=record.created_at)


@router.get("/{kb_id}/queries")
async def list_queries(
    kb_id: str, state: State, limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> QueryHistoryPage:
    """The queries recorded on the KB (the debug page's history), newest first."""
    container = state.container
    await run_in_threadpool(require_kb, container, kb_id)
    records, total = await run_in_threadpool(container.repository.list_queries, kb_id, limit)
    return QueryHistoryPage(total=total, keep=container.settings.query_history_limit,
                            items=[record_out(r) for r in records])


@router.delete("/{kb_id}/queries")
async def clear_queries(kb_id: str, state: State) -> ClearedOut:
    """Forget the KB's recorded queries."""
    container = state.container
    await run_in_threadpool(require_kb, container, kb_id)
    deleted = await run_in_threadpool(container.repository.clear_queries, kb_id)
    return ClearedOut(deleted=deleted)
