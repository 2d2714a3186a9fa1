"""Dify's External Knowledge API: `POST /dify/retrieval` (register `http://HOST:PORT/dify`).

The knowledge_id is a KB id or name; the search is ragsift's plan, as chat runs it (a FAQ
entry above the direct-answer threshold is the only record; close entries come before the
chunks) within the key's scope, with the metadata conditions as filters (every operator of
Dify's spec, api/dify_conditions.py) and the records'
scores normalised to 0-1 (api/dify_mapping.py). Errors are Dify's `{"error_code",
"error_msg"}` (api/compat_errors.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State
from ragsift.api.dify_conditions import FilenameIds, filename_matcher
from ragsift.api.dify_mapping import DifyFilters, conditions_to_filters, plan_records
from ragsift.api.errors import ApiError
from ragsift.api.schemas_dify import DifyErrorBody, DifyRetrievalBody, DifyRetrievalOut
from ragsift.bootstrap import Container
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": DifyErrorBody, "description": description}
    for status, description in (
        (400, "3001: invalid request, an unknown comparison operator or an invalid "
              "metadata condition"),
        (403, "1001: the Authorization header is missing or not `Bearer KEY`; 1002: the key "
              "is unknown, revoked or expired, or may not use this knowledge base"),
        (404, "2001: the knowledge base does not exist"),
        (429, "4001: too many requests (Retry-After)"),
        (500, "5001: internal error"),
        (503, "4001: overloaded (Retry-After); 5001: every retrieval channel failed"),
    )
}

router = APIRouter(prefix="/dify", tags=["dify"], responses=_ERRORS)


def _knowledge_base(container: Container, knowledge_id: str) -> KnowledgeBase:
    kb = container.repository.get_kb(knowledge_id) or \
        container.repository.get_kb_by_name(knowledge_id)
    if kb is None:
        raise ApiError(404, "kb_not_found", f"knowledge base {knowledge_id!r} does not exist")
    return kb


def _filename_ids(container: Container, kb_id: str) -> FilenameIds:
    """Resolves a file-name condition inside a metadata filter on the KB's documents."""
    def ids(raw: dict[str, Any]) -> list[str]:
        documents = container.repository.list_documents(kb_id)
        return filename_matcher({d.id: d.filename for d in documents})(raw)
    return ids


def _document_ids(container: Container, kb_id: str, filters: DifyFilters) -> tuple[str, ...] | None:
    """The document whitelist: the ids named, those of the filenames named, or both."""
    ids = filters.document_ids
    if filters.filenames is None:
        return ids
    wanted = set(filters.filenames)
    named = tuple(d.id for d in container.repository.list_documents(kb_id)
                  if d.filename in wanted)
    return named if ids is None else tuple(i for i in ids if i in named)


@router.post("/retrieval")
async def dify_retrieval(
    body: DifyRetrievalBody, state: State, principal: CurrentPrincipal
) -> DifyRetrievalOut:
    """Dify's External Knowledge API: chunks for a query, scored 0-1, at most top_k, at or over
    score_threshold, with metadata (chunk and document ids, filename, locator, heading path)."""
    container = state.container
    kb = await run_in_threadpool(_knowledge_base, container, body.knowledge_id)
    principal.check_kb(kb.id)
    filters = await run_in_threadpool(
        conditions_to_filters, body.metadata_condition, _filename_ids(container, kb.id))
    document_ids = await run_in_threadpool(_document_ids, container, kb.id, filters)
    # the key's scope is the ceiling: conditions may narrow it, never widen it
    scope = principal.ceiling(filters.tenant_ids, filters.dataset_ids, filters.visibilities,
                              None)
    narrowed = (document_ids, filters.sources, scope["tenant_ids"], scope["dataset_ids"],
                scope["visibilities"])
    if any(values == () for values in narrowed):
        return DifyRetrievalOut(records=[])  # the conditions accept nothing
    result = await container.retrieval.search(SearchRequest(
        query=body.query, kb_id=kb.id, top_k=body.retrieval_setting.top_k,
        document_ids=document_ids, sources=filters.sources, tenant_ids=scope["tenant_ids"],
        dataset_ids=scope["dataset_ids"], visibilities=scope["visibilities"],
        roles=scope["roles"], run_doc=True, filter=filters.metadata,
        # FAQ entries are no documents: a condition naming documents or their metadata
        # leaves them out
        run_faq=False if filters.document_ids is not None or filters.filenames is not None
        or filters.metadata is not None else None,
    ))
    state.metrics.observe_retrieval(result.trace)
    setting = body.retrieval_setting
    return DifyRetrievalOut(records=plan_records(
        result, setting.top_k, setting.score_threshold,
        container.settings.chat_faq_evidence_min_score))
