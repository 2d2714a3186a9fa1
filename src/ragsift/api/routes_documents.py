"""Documents: upload (accepted at once, ingested in the background), status, reindex, delete."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal, Principal
from ragsift.api.deps import AppState, State, require_document, require_kb
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas import ChunkOut, ChunkPage, DocumentPatch, UploadedDocument, UploadOut
from ragsift.api.uploads import UploadForm, UploadLimits, read_upload
from ragsift.config import metadata_limits
from ragsift.domain.keys import normalize_key
from ragsift.domain.metadata import merge_metadata, validate_metadata
from ragsift.domain.metadata_keys import summarize_keys
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.ingestion.front_matter import front_matter, is_markdown
from ragsift.ingestion.given_metadata import apply_given_metadata
from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS

router = APIRouter(tags=["documents"], responses=ERROR_RESPONSES)

MAX_FILES_PER_UPLOAD = 100
# allowed_roles: comma-separated roles that may see the documents (none: everyone)
SCOPE_FIELDS = ("source", "tenant_id", "dataset_id", "visibility", "allowed_roles")
# key: the document's key, for a single file (default: its filename); replace: "true" lets a
# file whose key exists with other bytes replace that document (else 409 key_exists)
# metadata: a JSON object given to every uploaded document (docs/how-to/metadata-filters.md)
FORM_FIELDS = (*SCOPE_FIELDS, "key", "replace", "metadata")
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
                "key": {"type": "string", "maxLength": 1024,
                        "description": "the document's key (one file only) [its filename]"},
                "replace": {"type": "string", "enum": ["true", "false"],
                            "description": "replace the document of an existing key "
                            "[false: 409 key_exists]"},
                "metadata": {"type": "string", "maxLength": 4096,
                             "description": "a JSON object of metadata for every file, e.g. "
                             "{\"dept\": \"hr\", \"year\": 2024}"},
            },
        }}},
    }
}
_UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": ErrorBody, "description": "a file over the size limit, or too many files"},
    415: {"model": ErrorBody, "description": "not multipart, or an unsupported file type"},
}


def _accept_all(
    state: AppState, kb: KnowledgeBase, form: UploadForm, principal: Principal
) -> UploadOut:
    fields = {name: value.strip() or None for name, value in form.fields.items()}
    roles = (fields.get("allowed_roles") or "").split(",")
    scope = DocumentScope(
        source=fields.get("source"), tenant_id=fields.get("tenant_id"),
        dataset_id=fields.get("dataset_id"), visibility=fields.get("visibility"),
        allowed_roles=tuple(dict.fromkeys(r.strip() for r in roles if r.strip())),
    )
    scope = principal.written_scope(scope)  # a key writes only what it could read back
    # an administrator giving no scope keeps a key's document's own (as the CLI does)
    given = None if principal.key is None and scope == DocumentScope() else scope
    key = fields.get("key")
    if key is not None and len(form.files) != 1:
        raise ApiError(400, "invalid_input", "the key field names one file; upload one file")
    replace = (fields.get("replace") or "false").lower() == "true"
    metadata = _form_metadata(state, fields.get("metadata"))
    accepted: list[UploadedDocument] = []
    for uploaded in form.files:
        data = uploaded.read()
        wanted = _with_front_matter(state, uploaded.filename, data, metadata)
        outcome = state.worker.accept(kb, uploaded.filename, data, given, key=key,
                                      replace=replace)
        document = outcome.document
        if outcome.other_scope:
            raise ApiError(409, "key_exists", f"the key {document.key!r} is held by a "
                           "document of another scope (tenant, dataset, visibility or roles); "
                           "upload the file under another key")
        if outcome.conflict:
            raise ApiError(409, "key_exists", f"document {document.id!r} already has the key "
                           f"{document.key!r} with other content; send replace=true to "
                           "replace it")
        if outcome.replacing:
            state.worker.submit_replace(document.id, uploaded.filename, data)
        # a duplicate (same bytes) is the existing document, maybe another file's: its
        # metadata changes only with replace=true, and the answer says when it did not
        ignored = apply_given_metadata(state.container.repository, state.container.versions,
                                       kb, outcome, wanted, replace,
                                       state.container.ingestion.refresh_metadata)
        accepted.append(UploadedDocument(
            id=document.id, filename=uploaded.filename, status=document.status,
            duplicate=outcome.duplicate, error=document.error, key=document.key,
            replacing=outcome.replacing, metadata_ignored=ignored,
        ))
    return UploadOut(documents=accepted)


def _with_front_matter(state: AppState, filename: str, data: bytes,
                       given: dict[str, Any] | None) -> dict[str, Any] | None:
    """A Markdown file's front matter with the form's metadata over it, validated (400 before
    the file is accepted); None when there is neither."""
    front = front_matter(data) if is_markdown(filename) else {}
    if not front:
        return given
    return validate_metadata({**front, **(given or {})},
                             metadata_limits(state.container.settings))


def _form_metadata(state: AppState, text: str | None) -> dict[str, Any] | None:
    """The upload's `metadata` field validated (400 before any file is accepted)."""
    if text is None:
        return None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApiError(400, "invalid_input", f"the metadata field is not JSON: {exc}") from exc
    return validate_metadata(raw, metadata_limits(state.container.settings))


@router.post("/api/kbs/{kb_id}/documents", status_code=202, openapi_extra=_UPLOAD_BODY,
             responses=_UPLOAD_ERRORS)
async def upload_documents(
    kb_id: str, request: Request, state: State, principal: CurrentPrincipal
) -> UploadOut:
    """Upload one or many files (multipart `files`); each becomes a PENDING document at once.

    Status then moves PENDING -> PARSING -> INDEXING -> READY | FAILED in the background.
    """
    kb = await run_in_threadpool(require_kb, state.container, kb_id)
    limits = UploadLimits(
        file_field="files", extensions=SUPPORTED_EXTENSIONS,
        max_file_bytes=state.container.settings.max_file_bytes,
        max_files=MAX_FILES_PER_UPLOAD, text_fields=frozenset(FORM_FIELDS),
        max_field_bytes=1024,
    )
    form = await read_upload(request, limits)
    try:
        return await run_in_threadpool(_accept_all, state, kb, form, principal)
    finally:
        form.close()


@router.get("/api/kbs/{kb_id}/documents")
def list_documents(
    kb_id: str, state: State, principal: CurrentPrincipal,
    status: DocumentStatus | None = None, key: str | None = None,
) -> list[Document]:
    """Documents of a knowledge base (those within the key's scope), oldest first,
    optionally only those in `status` or the one with `key`."""
    kb = require_kb(state.container, kb_id)
    documents = [d for d in state.container.repository.list_documents(kb.id, status)
                 if principal.sees(d.scope)]
    if key is not None:
        wanted = normalize_key(key)
        documents = [d for d in documents if d.key == wanted]
    return documents


_GONE = (DocumentStatus.DELETING, DocumentStatus.RETIRED)


@router.get("/api/kbs/{kb_id}/metadata-keys")
def metadata_keys(kb_id: str, state: State, principal: CurrentPrincipal) -> list[dict[str, Any]]:
    """The metadata keys of the KB's documents within the key's scope, each with its types
    (string, number, boolean, date, datetime, list), how many documents set it and up to
    five sample values: what a filter can name (the web pages' filter editor offers them)."""
    kb = require_kb(state.container, kb_id)
    return summarize_keys(d.metadata for d in state.container.repository.list_documents(kb.id)
                          if d.status not in _GONE and principal.sees(d.scope))


@router.get("/api/documents/{document_id}/chunks")
def list_chunks(
    document_id: str, state: State, offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> ChunkPage:
    """A page of the document's current chunks (sections first, then their pieces); `indexed`
    counts the pieces that are searched, `sections` their parents."""
    require_document(state.container, document_id)
    rows = [c for c in state.container.repository.list_chunks(document_id)
            if c.valid_to_seq == 0]
    rows.sort(key=lambda c: (c.level, c.ordinal, c.id))
    sections = sum(1 for c in rows if c.level == 0)
    return ChunkPage(total=len(rows), offset=offset, indexed=len(rows) - sections,
                     sections=sections, chunks=[
        ChunkOut(id=c.id, level=c.level, parent_id=c.parent_id, ordinal=c.ordinal,
                 heading_path=tuple(c.heading_path), locator=c.locator,
                 token_count=c.token_count, text=c.text, asset_ids=c.asset_ids)
        for c in rows[offset:offset + limit]])


@router.put("/api/documents/{document_id}/content", status_code=202,
            openapi_extra={"requestBody": {"required": True, "content": {
                "multipart/form-data": {"schema": {
                    "type": "object", "required": ["file"], "additionalProperties": False,
                    "properties": {"file": {"type": "string", "format": "binary"}}}}}}},
            responses={409: {"model": ErrorBody, "description": "the document is busy"},
                       **_UPLOAD_ERRORS})
async def replace_content(document_id: str, request: Request, state: State) -> Document:
    """Replace a document's bytes (multipart `file`): a new revision of the same document,
    written in the background; the current content stays searchable until it is done."""
    document = await run_in_threadpool(require_document, state.container, document_id)
    kb = await run_in_threadpool(require_kb, state.container, document.kb_id)
    limits = UploadLimits(
        file_field="file", extensions=SUPPORTED_EXTENSIONS,
        max_file_bytes=state.container.settings.max_file_bytes, max_files=1,
        text_fields=frozenset(), max_field_bytes=1,
    )
    form = await read_upload(request, limits)
    try:
        [uploaded] = form.files
        data = uploaded.read()
    finally:
        form.close()
    del kb  # checked: the document's KB exists
    if hashlib.sha256(data).hexdigest() == document.sha256:
        return document  # the same bytes: nothing to do
    await run_in_threadpool(state.container.ingestion.claim_replace, document_id)
    state.worker.submit_replace(document_id, uploaded.filename, data)
    return document.model_copy(update={"replacing": True})


@router.get("/api/documents/{document_id}")
def get_document(document_id: str, state: State) -> Document:
    """One document: its status, and the reason when it FAILED."""
    return require_document(state.container, document_id)


@router.patch("/api/documents/{document_id}")
def patch_document(document_id: str, body: DocumentPatch, state: State) -> Document:
    """Change a document's metadata (merged, or replaced with `replace`); nothing is
    re-embedded: the facts change, then the BM25 index's metadata terms of its chunks."""
    document = require_document(state.container, document_id)
    limits = metadata_limits(state.container.settings)
    if body.replace:
        wanted = validate_metadata(body.metadata, limits)
        updated = state.container.repository.update_metadata(document_id, lambda _: wanted)
    else:  # merged with the metadata as it is when written, not as read above
        updated = state.container.repository.update_metadata(
            document_id, lambda current: merge_metadata(current, body.metadata, limits))
    # changed as against the metadata the write replaced (a concurrent change may have
    # landed since the read above): auto mode publishes it, the BM25 terms follow
    if updated.changed:
        state.container.versions.metadata_changed(require_kb(state.container, document.kb_id))
        state.container.ingestion.refresh_metadata({document_id: updated.metadata})
    return document.model_copy(update={"metadata": updated.metadata})


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
