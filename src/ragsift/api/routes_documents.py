"""Documents: upload (accepted at once, ingested in the background), status, reindex, delete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from ragsift.api.deps import AppState, State, require_document, require_kb
from ragsift.api.errors import ERROR_RESPONSES, ApiError, ErrorBody
from ragsift.api.schemas import UploadedDocument, UploadOut
from ragsift.api.uploads import UploadForm, UploadLimits, read_upload
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS

router = APIRouter(tags=["documents"], responses=ERROR_RESPONSES)

MAX_FILES_PER_UPLOAD = 100
# allowed_roles: comma-separated roles that may see the documents (none: everyone)
SCOPE_FIELDS = ("source", "tenant_id", "dataset_id", "visibility", "allowed_roles")
# Anything else is being ingested, deleted or retired: a reindex would race it.
REINDEXABLE = (DocumentStatus.READY, DocumentStatus.FAILED)

_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object",
            "required": ["files"],
            "additionalProperties": False,
            "properties": {
                "files": {"type": "array", "minItems": 1,
                          "items": {"type": "string", "format": "binary"},
                          "description": "one or more files: "
                          + ", ".join(sorted(SUPPORTED_EXTENSIONS))},
                **{name: {"type": "string", "maxLength": 200} for name in SCOPE_FIELDS},
            },
        }}},
    }
}
_UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": ErrorBody, "description": "a file over the size limit, or too many files"},
    415: {"model": ErrorBody, "description": "not multipart, or an unsupported file type"},
}


def _accept_all(state: AppState, kb: KnowledgeBase, form: UploadForm) -> UploadOut:
    fields = {name: value.strip() or None for name, value in form.fields.items()}
    roles = (fields.get("allowed_roles") or "").split(",")
    scope = DocumentScope(
        source=fields.get("source"), tenant_id=fields.get("tenant_id"),
        dataset_id=fields.get("dataset_id"), visibility=fields.get("visibility"),
        allowed_roles=tuple(dict.fromkeys(r.strip() for r in roles if r.strip())),
    )
    accepted: list[UploadedDocument] = []
    for uploaded in form.files:
        outcome = state.worker.accept(kb, uploaded.filename, uploaded.read(), scope)
        document = outcome.document
        accepted.append(UploadedDocument(
            id=document.id, filename=uploaded.filename, status=document.status,
            duplicate=outcome.duplicate, error=document.error,
        ))
    return UploadOut(documents=accepted)


@router.post("/api/kbs/{kb_id}/documents", status_code=202, openapi_extra=_UPLOAD_BODY,
             responses=_UPLOAD_ERRORS)
async def upload_documents(kb_id: str, request: Request, state: State) -> UploadOut:
    """Upload one or many files (multipart `files`); each becomes a PENDING document at once.

    Status then moves PENDING -> PARSING -> INDEXING -> READY | FAILED in the background.
    """
    kb = await run_in_threadpool(require_kb, state.container, kb_id)
    limits = UploadLimits(
        file_field="files", extensions=SUPPORTED_EXTENSIONS,
        max_file_bytes=state.container.settings.max_file_bytes,
        max_files=MAX_FILES_PER_UPLOAD, text_fields=frozenset(SCOPE_FIELDS), max_field_bytes=200,
    )
    form = await read_upload(request, limits)
    try:
        return await run_in_threadpool(_accept_all, state, kb, form)
    finally:
        form.close()


@router.get("/api/kbs/{kb_id}/documents")
def list_documents(
    kb_id: str, state: State, status: DocumentStatus | None = None
) -> list[Document]:
    """Documents of a knowledge base, oldest first, optionally only those in `status`."""
    kb = require_kb(state.container, kb_id)
    return state.container.repository.list_documents(kb.id, status)


@router.get("/api/documents/{document_id}")
def get_document(document_id: str, state: State) -> Document:
    """One document: its status, and the reason when it FAILED."""
    return require_document(state.container, document_id)


@router.post("/api/documents/{document_id}/reindex", status_code=202,
             responses={409: {"model": ErrorBody, "description": "the document is busy"}})
def reindex_document(document_id: str, state: State) -> Document:
    """Re-parse a document from its stored original in the background (it goes PENDING)."""
    repository = state.container.repository
    document = require_document(state.container, document_id)
    # check and change in one statement: of concurrent reindexes (or a reindex racing the
    # worker), exactly one moves the document
    if not repository.set_status_if(document_id, REINDEXABLE, DocumentStatus.PENDING):
        current = require_document(state.container, document_id)  # 404 if deleted meanwhile
        raise ApiError(409, "document_busy",
                       f"document {document_id!r} is {current.status.value}; only a READY or "
                       "FAILED document can be reindexed (try again later)")
    state.worker.submit(document_id, reindex=True)
    return document.model_copy(update={"status": DocumentStatus.PENDING, "error": None})


@router.delete("/api/documents/{document_id}", status_code=204, response_class=Response)
def delete_document(document_id: str, state: State) -> None:
    """Remove a document from the facts, both indexes and the object store."""
    require_document(state.container, document_id)
    state.container.ingestion.delete_document(document_id)
