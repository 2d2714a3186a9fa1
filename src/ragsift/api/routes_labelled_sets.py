"""A knowledge base's stored labelled sets over HTTP (retrieval testing, issue 38).

A labels JSONL saved under a name (`POST /api/kbs/{kb_id}/labelled-sets`) is kept with the
KB, listed and deleted here, and scored by the evaluation view with `{"set_id": ...}` without
being uploaded again. A key reaches a KB's sets exactly when it reaches the KB; saving and
deleting need the editor role.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State, require_kb
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.domain.labelled_sets import LabelledSet, LabelledSetExists, TooManyLabelledSets
from ragsift.evaluation.labelled_sets import MAX_NAME, new_labelled_set

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"], responses=ERROR_RESPONSES)


class LabelledSetBody(BaseModel):
    model_config = {"extra": "forbid"}

    name: str = Field(min_length=1, max_length=MAX_NAME, description="unique in the KB")
    labels: str = Field(min_length=1, max_length=5_000_000, description="a labels JSONL as "
                        "`ragsift eval --kb --queries` reads it (RAGSIFT_WEB_EVAL_SET_MAX_BYTES)")


class LabelledSetOut(BaseModel):
    """A stored set (its labels are not repeated): its name, labelled queries, size, the key
    that saved it (null: auth off)."""

    id: str
    kb_id: str
    name: str
    queries: int
    size_bytes: int
    key_name: str | None
    created_at: datetime | None


class LabelledSetsOut(BaseModel):
    """The KB's sets by name; `max_sets`: how many it may keep (RAGSIFT_WEB_EVAL_MAX_SETS)."""

    max_sets: int
    max_bytes: int
    items: list[LabelledSetOut]


def _out(entry: LabelledSet) -> LabelledSetOut:
    return LabelledSetOut(id=entry.id, kb_id=entry.kb_id, name=entry.name,
                          queries=entry.queries, size_bytes=entry.size_bytes,
                          key_name=entry.key_name, created_at=entry.created_at)


@router.get("/{kb_id}/labelled-sets")
async def list_labelled_sets(kb_id: str, state: State) -> LabelledSetsOut:
    """The labelled sets stored with the KB, by name."""
    container = state.container
    await run_in_threadpool(require_kb, container, kb_id)
    found = await run_in_threadpool(container.repository.list_labelled_sets, kb_id)
    return LabelledSetsOut(max_sets=container.settings.web_eval_max_sets,
                           max_bytes=container.settings.web_eval_set_max_bytes,
                           items=[_out(entry) for entry in found])


@router.post("/{kb_id}/labelled-sets", status_code=201)
async def save_labelled_set(
    kb_id: str, body: LabelledSetBody, state: State, principal: CurrentPrincipal
) -> LabelledSetOut:
    """Store a labels JSONL under a name; 400 for a bad line (named) or a file over the
    bound, 409 for a name the KB uses or a KB holding its most sets."""
    container = state.container
    settings = container.settings
    await run_in_threadpool(require_kb, container, kb_id)
    entry = new_labelled_set(kb_id, body.name, body.labels, principal.name,
                             settings.web_eval_set_max_bytes)
    try:
        await run_in_threadpool(container.repository.save_labelled_set, entry,
                                settings.web_eval_max_sets)
    except (LabelledSetExists, TooManyLabelledSets) as exc:
        raise ApiError(409, exc.code, str(exc)) from exc
    return _out(entry)


@router.delete("/{kb_id}/labelled-sets/{set_id}", status_code=204)
async def delete_labelled_set(kb_id: str, set_id: str, state: State) -> None:
    """Forget one stored set of the KB; 404 for none."""
    container = state.container
    await run_in_threadpool(require_kb, container, kb_id)
    await run_in_threadpool(container.repository.delete_labelled_set, kb_id, set_id)
