"""Retrieval: `search` returns the plain hits array, `explain` adds FAQ hits and the trace."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal, Principal
from ragsift.api.deps import AppState, State, resolve_kbs
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES
from ragsift.api.schemas import ExplainOut, SearchBody
from ragsift.domain.errors import InvalidInput
from ragsift.domain.results import RetrievalHit, RetrievalResult
from ragsift.retrieval.query_history import query_record, record

router = APIRouter(prefix="/api/retrieval", tags=["retrieval"], responses={
    **ERROR_RESPONSES,
    409: {"model": ErrorBody, "description": "embedding_model_mismatch: the KB was built with "
          "another embedding model than the configured one (sparse mode still works)"},
    503: {"model": ErrorBody, "description": "every requested retrieval channel failed"},
})


async def _search(state: AppState, body: SearchBody, principal: Principal) -> RetrievalResult:
    kb_ids: tuple[str, ...] | None = None
    if body.kb_id is not None:  # named by id: nothing to look up, so no hop to a thread
        kb_id = body.kb_id
    else:
        kb_id, kb_ids = await run_in_threadpool(
            resolve_kbs, state.container, body.kb_id, body.kb, body.kbs)
    for each in kb_ids or (kb_id,):  # every KB a request names is within the key's scope
        principal.check_kb(each)
    request = body.to_request(kb_id, kb_ids)
    # the key's scope is the ceiling: a request may narrow it, never widen it
    request = request.model_copy(update=principal.ceiling(
        request.tenant_ids, request.dataset_ids, request.visibilities, request.roles))
    result = await state.container.retrieval.search(request)
    state.metrics.observe_retrieval(result.trace)
    return result


@router.post("/search")
async def search(
    body: SearchBody, state: State, principal: CurrentPrincipal
) -> list[RetrievalHit]:
    """The evidence for a query: the plain array of document hits (FAQ entries: see explain)."""
    return list((await _search(state, body, principal)).hits)


HistoryFlag = Annotated[bool, Query(
    description="record the search in its knowledge base's query history (the debug page "
                "does; GET /api/kbs/{id}/queries lists it); one knowledge base only")]


@router.post("/explain")
async def explain(
    body: SearchBody, state: State, principal: CurrentPrincipal, history: HistoryFlag = False,
) -> ExplainOut:
    """Document hits, FAQ hits, and the trace of every retrieval stage."""
    if history and body.kbs is not None and len(body.kbs) > 1:
        raise InvalidInput("history=true records a search of one knowledge base; this one "
                           "names several (kbs)")
    result = await _search(state, body, principal)
    if history:
        entry = query_record(result.trace.kb_id, body.query, body.model_dump(mode="json"),
                             result, principal.name)
        await run_in_threadpool(record, state.container.repository, entry,
                                state.container.settings.query_history_limit)
    return ExplainOut(results=list(result.hits), faq=list(result.faq_hits), trace=result.trace)
