"""A knowledge base's own settings over HTTP (issue 38): GET shows them, PATCH changes them.

The process settings are the defaults; a KB stores only its overrides. A change to the
chunking, OCR or asset settings applies to documents ingested from then on; the response
says which keys changed since the KB's documents were built, and how to reindex them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from ragsift.api.deps import State, require_kb
from ragsift.api.errors import ERROR_RESPONSES
from ragsift.kb_settings_service import KbSettingsOut, settings_out

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"], responses=ERROR_RESPONSES)


class KbSettingsPatch(BaseModel):
    """Overrides to set (`set`, key: value) and to drop (`unset`, keys)."""

    model_config = {"extra": "forbid"}

    set: dict[str, Any] = Field(default_factory=dict, description="key: value overrides")
    unset: list[str] = Field(default_factory=list, description="overrides to drop")


@router.get("/{kb_id}/settings")
def get_kb_settings(kb_id: str, state: State) -> KbSettingsOut:
    """The KB's settings: effective values and which are its own."""
    container = state.container
    kb = require_kb(container, kb_id)
    return settings_out(container.kb_settings.view(kb.id), kb.name)


@router.patch("/{kb_id}/settings")
def patch_kb_settings(kb_id: str, body: KbSettingsPatch, state: State) -> KbSettingsOut:
    """Set and drop overrides; 400 naming an unknown key or a value out of range.

    Chunking, OCR and asset changes apply to documents ingested from now on; until the KB
    is reindexed, `reindex_required` is true and `reindex` says how.
    """
    container = state.container
    kb = require_kb(container, kb_id)
    view = container.kb_settings.update(kb.id, body.set, body.unset)
    return settings_out(view, kb.name)
