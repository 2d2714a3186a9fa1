"""FAQ entries of a knowledge base: import a JSONL or CSV file, list, read, update, delete.

Readers list and read, editors change (api/access.py). An API key's scope applies as it does
to searches: a key sees only the entries within its tenants, datasets, visibility levels and
data roles (others are not there for it: 404), and it may write only entries it could read
back (403 otherwise).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal, Principal
from ragsift.api.deps import AppState, State, require_kb
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas import FaqImportOut
from ragsift.api.schemas_faq import FaqPageOut, FaqUpdateBody
from ragsift.api.uploads import UploadForm, UploadLimits, read_upload
from ragsift.domain.faq import FaqConflict, FaqContent, FaqEntry, clean_roles, faq_visible
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import DocumentScope, KnowledgeBase
from ragsift.ingestion.faq_import import CSV_SUFFIXES, JSONL_SUFFIXES, parse_faq_file
from ragsift.ingestion.faq_service import MAX_PAGE

router = APIRouter(tags=["faq"], responses=ERROR_RESPONSES)

# the import's default scope, for rows that give none (allowed_roles comma-separated)
SCOPE_FIELDS = ("source", "tenant_id", "dataset_id", "visibility", "allowed_roles")

_FAQ_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object",
            "required": ["file"],
            "additionalProperties": False,
            "properties": {
                "file": {
                    "type": "string", "format": "binary",
                    "description": "JSONL {question, answer, source?, tenant_id?, dataset_id?, "
                                   "visibility?, allowed_roles?} per line, or CSV with a "
                                   "question,answer[,source,...] header",
                },
                **{name: {"type": "string", "maxLength": 200,
                          "description": "default for rows that give none"}
                   for name in SCOPE_FIELDS},
            },
        }}},
    }
}
_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "faq_conflict: another live entry has the same "
          "question, answer and scope"},
}


def key_filter(principal: Principal, kb_id: str) -> SearchFilter | None:
    """What the calling key may see of a KB's FAQ, as a search filter; None: everything."""
    if principal.key is None:
        return None
    scope = principal.key.scope
    if not (scope.tenant_ids or scope.dataset_ids or scope.visibilities or scope.data_roles):
        return None
    return SearchFilter(
        kb_id=kb_id, tenant_ids=frozenset(scope.tenant_ids) or None,
        dataset_ids=frozenset(scope.dataset_ids) or None,
        visibilities=frozenset(scope.visibilities) or None,
        # a key without data roles is not bounded by role (it may name any in a search)
        roles=frozenset(scope.data_roles) or None,
    )


def _check_writable(principal: Principal, kb_id: str, contents: list[FaqContent]) -> None:
    """403 unless the key could read back every entry it writes."""
    visible = key_filter(principal, kb_id)
    if visible is None:
        return
    for content in contents:
        if not faq_visible(content.entry(kb_id, 0), visible):
            assert principal.key is not None
            raise ApiError(403, "forbidden", f"a FAQ entry with tenant {content.tenant_id!r}, "
                           f"dataset {content.dataset_id!r}, visibility {content.visibility!r} "
                           f"and roles {list(content.allowed_roles)} is outside the scope of "
                           f"API key {principal.key.name!r}")


def _visible_entry(
    state: AppState, principal: Principal, kb: KnowledgeBase, faq_id: str
) -> FaqEntry:
    """The entry, or 404 when it is not in the KB or outside the key's scope."""
    entry = state.container.faq.get(kb, faq_id)
    visible = key_filter(principal, kb.id)
    if visible is not None and not faq_visible(entry, visible):
        raise ApiError(404, "not_found",
                       f"FAQ entry {faq_id!r} does not exist in knowledge base {kb.name!r}")
    return entry


def _import(
    state: AppState, principal: Principal, kb: KnowledgeBase, form: UploadForm
) -> FaqImportOut:
    fields = {name: value.strip() or None for name, value in form.fields.items()}
    defaults = DocumentScope(
        source=fields.get("source"), tenant_id=fields.get("tenant_id"),
        dataset_id=fields.get("dataset_id"), visibility=fields.get("visibility"),
        allowed_roles=clean_roles((fields.get("allowed_roles") or "").split(",")),
    )
    uploaded = form.files[0]
    rows = parse_faq_file(uploaded.filename, uploaded.read())
    _check_writable(principal, kb.id, [row.content(defaults) for row in rows])
    outcome = state.container.faq.import_rows(kb, rows, defaults=defaults)
    return FaqImportOut(rows=outcome.rows, added=outcome.added, duplicates=outcome.duplicates)


@router.post("/api/kbs/{kb_id}/faq", openapi_extra=_FAQ_BODY, responses={
    413: {"model": ErrorBody, "description": "the file is over the size limit"},
    415: {"model": ErrorBody, "description": "not multipart, or not .jsonl/.csv"},
})
async def import_faq(
    kb_id: str, request: Request, state: State, principal: CurrentPrincipal
) -> FaqImportOut:
    """Import FAQ entries; every row is valid or nothing is stored; known entries are skipped.

    Form fields `source`, `tenant_id`, `dataset_id`, `visibility`, `allowed_roles=hr,finance`
    are the scope of rows that give none; a row's own values override them.
    """
    kb = await run_in_threadpool(require_kb, state.container, kb_id)
    limits = UploadLimits(
        file_field="file", extensions=frozenset(JSONL_SUFFIXES + CSV_SUFFIXES),
        max_file_bytes=state.container.settings.max_file_bytes, max_files=1,
        text_fields=frozenset(SCOPE_FIELDS), max_field_bytes=200,
    )
    form = await read_upload(request, limits)
    try:
        return await run_in_threadpool(_import, state, principal, kb, form)
    finally:
        form.close()


@router.get("/api/kbs/{kb_id}/faq")
def list_faq(
    kb_id: str, state: State, principal: CurrentPrincipal,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> FaqPageOut:
    """The live FAQ entries (the draft's) with their scope and version window, oldest
    first, within the key's scope."""
    kb = require_kb(state.container, kb_id)
    page = state.container.faq.page(kb, offset, limit, key_filter(principal, kb.id))
    return FaqPageOut(entries=list(page.entries), total=page.total, offset=offset, limit=limit)


@router.get("/api/kbs/{kb_id}/faq/{faq_id}")
def get_faq(kb_id: str, faq_id: str, state: State, principal: CurrentPrincipal) -> FaqEntry:
    """One FAQ entry, live or retired (`valid_to_seq` > 0: only older versions hold it)."""
    kb = require_kb(state.container, kb_id)
    return _visible_entry(state, principal, kb, faq_id)


@router.patch("/api/kbs/{kb_id}/faq/{faq_id}", responses=_CONFLICT)
def update_faq(
    kb_id: str, faq_id: str, body: FaqUpdateBody, state: State, principal: CurrentPrincipal
) -> FaqEntry:
    """Change a live entry's question, answer, source or scope: it is re-embedded and
    re-indexed as a new entry with a new id (returned) that replaces it; the old id stays
    readable for the older retained versions. A body that changes nothing returns the entry
    as it is."""
    kb = require_kb(state.container, kb_id)
    entry = _visible_entry(state, principal, kb, faq_id)
    changes = body.changes()
    if entry.live:
        _check_writable(principal, kb.id, [changes.apply(entry.content)])
    try:
        return state.container.faq.update(kb, faq_id, changes)
    except FaqConflict as exc:
        raise ApiError(409, exc.code, str(exc)) from exc


@router.delete("/api/kbs/{kb_id}/faq/{faq_id}", status_code=204, response_class=Response)
def delete_faq(kb_id: str, faq_id: str, state: State, principal: CurrentPrincipal) -> None:
    """Remove a live entry from the knowledge base (older retained versions keep it)."""
    kb = require_kb(state.container, kb_id)
    _visible_entry(state, principal, kb, faq_id)
    state.container.faq.delete(kb, faq_id)
