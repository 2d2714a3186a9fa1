"""Retrieval: `search` returns the plain hits array, `explain` adds FAQ hits and the trace."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ragsift.api.deps import AppState, State
from ragsift.api.errors import ERROR_RESPONSES, ErrorBody
from ragsift.api.schemas import ExplainOut, SearchBody
from ragsift.domain.errors import NotFound
from ragsift.domain.results import RetrievalHit, RetrievalResult

router = APIRouter(prefix="/api/retrieval", tags=["retrieval"], responses={
    **ERROR_RESPONSES,
    503: {"model": ErrorBody, "description": "every requested retrieval channel failed"},
})


def _kb_id(state: AppState, body: SearchBody) -> str:
    if body.kb_id is not None:
        return body.kb_id
    assert body.kb is not None  # SearchBody requires one of them
    kb = state.container.repository.get_kb_by_name(body.kb)
    if kb is None:
        raise NotFound(f"knowledge base {body.kb!r} does not exist")
    return kb.id


async def _search(state: AppState, body: SearchBody) -> RetrievalResult:
    kb_id = await run_in_threadpool(_kb_id, state, body)
    result = await state.container.retrieval.search(body.to_request(kb_id))
    state.metrics.observe_retrieval(result.trace)
    return result


@router.post("/search")
async def search(body: SearchBody, state: State) -> list[RetrievalHit]:
    """The evidence for a query: the plain array of document hits (FAQ entries: see explain)."""
    return list((await _search(state, body)).hits)


@router.post("/explain")
async def explain(body: SearchBody, state: State) -> ExplainOut:
    """Document hits, FAQ hits, and the trace of every retrieval stage."""
    result = await _search(state, body)
    return ExplainOut(results=list(result.hits), faq=list(result.faq_hits), trace=result.trace)
