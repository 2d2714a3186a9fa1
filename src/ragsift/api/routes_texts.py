"""Texts by key: plain-text documents written, read and deleted by the caller's own ids.

What a vector store needs (LangChain `add_texts` / `get_by_ids` / `delete`, LlamaIndex `add` /
`delete`): each text becomes a document of the KB under its key (the caller's id), as a
`.txt` file with its metadata; writing a key again replaces that document (upsert). The text
is ingested like any upload (chunked, embedded server-side); poll the documents until READY
(and no longer `replacing`). ragsift keeps one document per content and access scope: a text
already stored under another key is answered `duplicate` with that document (its `key`
differs from the one asked for).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal, Principal
from ragsift.api.deps import AppState, State, require_kb
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas import UploadedDocument, UploadOut
from ragsift.api.schemas_texts import MAX_KEYS, DeletedOut, TextOut, TextsBody
from ragsift.config import metadata_limits
from ragsift.domain.errors import InvalidInput
from ragsift.domain.keys import normalize_key
from ragsift.domain.metadata import validate_metadata
from ragsift.domain.models import Document, DocumentScope, KnowledgeBase
from ragsift.ingestion.given_metadata import apply_given_metadata

router = APIRouter(tags=["documents"], responses=ERROR_RESPONSES)

def text_filename(key: str) -> str:
    """The file name a text is stored under: its key's last segment, as .txt."""
    return f"{key.rsplit('/', 1)[-1]}.txt"


def _write(state: AppState, kb: KnowledgeBase, body: TextsBody,
           principal: Principal) -> UploadOut:
    limits = metadata_limits(state.container.settings)
    checked = []
    for item in body.texts:  # every text is checked before any is written
        try:
            checked.append((normalize_key(item.key), item.text.encode("utf-8"),
                            validate_metadata(item.metadata, limits)))
        except InvalidInput as exc:
            raise ApiError(400, "invalid_input", f"text {item.key!r}: {exc}") from exc
    scope = principal.written_scope(DocumentScope())
    given = None if principal.key is None else scope
    accepted: list[UploadedDocument] = []
    for key, data, metadata in checked:
        filename = text_filename(key)
        outcome = state.worker.accept(kb, filename, data, given, key=key, replace=True)
        document = outcome.document
        if outcome.other_scope:
            raise ApiError(409, "key_exists", f"the key {key!r} is held by a document of "
                           "another scope (tenant, dataset, visibility or roles)")
        if outcome.replacing:
            state.worker.submit_replace(document.id, filename, data)
        if document.key == key:  # a duplicate under another key keeps its own metadata
            # the same bytes again run no ingest: a metadata change is published here
            apply_given_metadata(state.container.repository, state.container.versions, kb,
                                 outcome, metadata, replace=True,
                                 refresh=state.container.ingestion.refresh_metadata)
        accepted.append(UploadedDocument(
            id=document.id, filename=filename, status=document.status,
            duplicate=outcome.duplicate, error=document.error, key=document.key,
            replacing=outcome.replacing,
        ))
    return UploadOut(documents=accepted)


@router.post("/api/kbs/{kb_id}/texts", status_code=202)
async def write_texts(kb_id: str, body: TextsBody, state: State,
                      principal: CurrentPrincipal) -> UploadOut:
    """Store each text as a plain-text document under its key, replacing the document a key
    already names (upsert); ingested in the background like an upload."""
    kb = await run_in_threadpool(require_kb, state.container, kb_id)
    return await run_in_threadpool(_write, state, kb, body, principal)


def _found(state: AppState, kb_id: str, keys: list[str],
           principal: Principal) -> list[tuple[str, Document]]:
    """(key, document) for each of `keys` a document of the KB holds within the key's scope,
    in the order asked, each once."""
    require_kb(state.container, kb_id)
    found: list[tuple[str, Document]] = []
    for raw in dict.fromkeys(keys):
        try:
            key = normalize_key(raw)
        except InvalidInput:
            continue  # no document can hold it
        document = state.container.repository.find_document_by_key(kb_id, key)
        if document is not None and principal.sees(document.scope):
            found.append((raw, document))
    return found


def _read(state: AppState, kb_id: str, keys: list[str], principal: Principal) -> list[TextOut]:
    out: list[TextOut] = []
    for key, document in _found(state, kb_id, keys, principal):
        data = state.container.ingestion.read_original(document)
        out.append(TextOut(key=key, document_id=document.id, status=document.status.value,
                           replacing=document.replacing,
                           text=data.decode("utf-8", errors="replace"),
                           metadata=document.metadata))
    return out


Keys = Annotated[list[str], Query(min_length=1, max_length=MAX_KEYS, alias="id")]


@router.get("/api/kbs/{kb_id}/texts")
async def read_texts(kb_id: str, keys: Keys, state: State,
                     principal: CurrentPrincipal) -> list[TextOut]:
    """The stored texts of the keys given (`?id=a&id=b`); keys no document holds are left
    out (no error)."""
    return await run_in_threadpool(_read, state, kb_id, keys, principal)


def _delete(state: AppState, kb_id: str, keys: list[str], principal: Principal) -> DeletedOut:
    deleted = []
    for key, document in _found(state, kb_id, keys, principal):
        state.container.ingestion.delete_document(document.id)
        deleted.append(key)
    return DeletedOut(deleted=deleted)


@router.delete("/api/kbs/{kb_id}/texts")
async def delete_texts(kb_id: str, keys: Keys, state: State,
                       principal: CurrentPrincipal) -> DeletedOut:
    """Delete the documents of the keys given; keys no document holds are left out."""
    return await run_in_threadpool(_delete, state, kb_id, keys, principal)
