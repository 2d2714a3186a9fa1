"""Maintenance of a knowledge base over HTTP: rebuild its BM25 side, reindex its documents.

With `ragsift serve` running, the CLI cannot open the same data directory, so these are the
way to run maintenance on a live service; both are safe while searches go on.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from ragsift.api.deps import State, require_kb
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.bootstrap import build_maintenance
from ragsift.domain.errors import RagsiftError
from ragsift.domain.models import DocumentStatus

router = APIRouter(prefix="/api/kbs", tags=["maintenance"], responses=ERROR_RESPONSES)

# How long a BM25 rebuild waits for documents this process is writing (MaintenanceService).
SETTLE_S = 30.0
REINDEXABLE = (DocumentStatus.READY, DocumentStatus.FAILED)


class SparseRebuildOut(BaseModel):
    """What a BM25 rebuild indexed."""

    kb_id: str
    chunks: int
    faq_entries: int


class SkippedDocument(BaseModel):
    id: str
    status: DocumentStatus
    reason: str


class ReindexOut(BaseModel):
    """Documents queued for a re-parse (each goes PENDING) and those left alone."""

    queued: list[str]
    skipped: list[SkippedDocument]


@router.post("/{kb_id}/rebuild-sparse", responses={
    409: {"model": ErrorBody, "description": "a rebuild of this KB is already running"},
})
def rebuild_sparse(kb_id: str, state: State) -> SparseRebuildOut:
    """Rebuild the KB's BM25 index (chunks and FAQ) from the facts, without re-embedding.

    The new index is built beside the live one and switched in atomically; searches go on.
    """
    container = state.container
    kb = require_kb(container, kb_id)
    try:
        report = build_maintenance(container, settle_s=SETTLE_S).rebuild_sparse(kb)
    except RagsiftError as exc:
        if exc.code == "rebuild_in_progress":
            raise ApiError(409, exc.code, str(exc)) from exc
        raise
    return SparseRebuildOut(kb_id=kb.id, chunks=report.chunks, faq_entries=report.faq_entries)


@router.post("/{kb_id}/reindex", status_code=202)
def reindex_kb(kb_id: str, state: State) -> ReindexOut:
    """Re-parse every READY or FAILED document of the KB from its stored original.

    Each queued document goes PENDING (hidden from search) until its re-parse ends READY or
    FAILED; documents still being ingested or deleted are skipped.
    """
    container = state.container
    kb = require_kb(container, kb_id)
    queued: list[str] = []
    skipped: list[SkippedDocument] = []
    repository = container.repository
    for document in repository.list_documents(kb.id):
        # one conditional UPDATE: a document that became busy since it was listed is skipped
        if not repository.set_status_if(document.id, REINDEXABLE, DocumentStatus.PENDING):
            current = repository.get_document(document.id) or document
            skipped.append(SkippedDocument(
                id=document.id, status=current.status,
                reason=f"the document is {current.status.value}",
            ))
            continue
        state.worker.submit(document.id, reindex=True)
        queued.append(document.id)
    # every document is being rebuilt with the KB's settings (a skipped one is being
    # ingested with them already): no longer "changed since build"
    container.kb_settings.mark_built(kb.id)
    return ReindexOut(queued=queued, skipped=skipped)
