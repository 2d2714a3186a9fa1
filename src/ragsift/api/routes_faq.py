"""FAQ import: a JSONL or CSV file of question/answer pairs into a knowledge base."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from ragsift.api.deps import AppState, State, require_kb
from ragsift.api.errors import ERROR_RESPONSES, ErrorBody
from ragsift.api.schemas import FaqImportOut
from ragsift.api.uploads import UploadedFile, UploadLimits, read_upload
from ragsift.domain.models import KnowledgeBase
from ragsift.ingestion.faq_import import CSV_SUFFIXES, JSONL_SUFFIXES, parse_faq_file

router = APIRouter(tags=["faq"], responses=ERROR_RESPONSES)

_FAQ_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object",
            "required": ["file"],
            "additionalProperties": False,
            "properties": {"file": {
                "type": "string", "format": "binary",
                "description": "JSONL {question, answer, source?} per line, or CSV with a "
                               "question,answer[,source] header",
            }},
        }}},
    }
}


def _import(state: AppState, kb: KnowledgeBase, uploaded: UploadedFile) -> FaqImportOut:
    rows = parse_faq_file(uploaded.filename, uploaded.read())
    outcome = state.container.faq.import_rows(kb, rows)
    return FaqImportOut(rows=outcome.rows, added=outcome.added, duplicates=outcome.duplicates)


@router.post("/api/kbs/{kb_id}/faq", openapi_extra=_FAQ_BODY, responses={
    413: {"model": ErrorBody, "description": "the file is over the size limit"},
    415: {"model": ErrorBody, "description": "not multipart, or not .jsonl/.csv"},
})
async def import_faq(kb_id: str, request: Request, state: State) -> FaqImportOut:
    """Import FAQ entries; every row is valid or nothing is stored; known pairs are skipped."""
    kb = await run_in_threadpool(require_kb, state.container, kb_id)
    limits = UploadLimits(
        file_field="file", extensions=frozenset(JSONL_SUFFIXES + CSV_SUFFIXES),
        max_file_bytes=state.container.settings.max_file_bytes, max_files=1,
    )
    form = await read_upload(request, limits)
    try:
        return await run_in_threadpool(_import, state, kb, form.files[0])
    finally:
        form.close()
