"""KB versions over HTTP: list, seal, activate behind the quality gate, roll back, diff,
check and configure. The gate's refusal is a 409 `gate_refused`; its report is what
`POST .../versions/{seq}/check` returns."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from ragsift.api.deps import State, require_kb
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas import Body, Text
from ragsift.domain.versions import (
    Activation,
    ActivationOutcome,
    GateConfig,
    GateRefused,
    GateReport,
    KbVersion,
    LabelledQuery,
    PublishMode,
    VersionDiff,
    VersionState,
)

router = APIRouter(prefix="/api/kbs/{kb_id}/versions", tags=["knowledge-base versions"],
                   responses=ERROR_RESPONSES)

# PostgreSQL INTEGER: a larger number could not name a version anyway
MAX_SEQ = 2**31 - 1
Seq = Annotated[int, Path(ge=0, le=MAX_SEQ, description="version number (version_seq)")]
OptionalSeq = Annotated[int | None, Query(ge=0, le=MAX_SEQ)]

_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "refused by the quality gate, or nothing to do"},
}


class VersionsOut(BaseModel):
    """The KB's version state, its retained versions and the latest activations."""

    state: VersionState
    versions: list[KbVersion]
    activations: list[Activation]


class SealBody(Body):
    note: Text | None = Field(default=None, max_length=1000)
    rebuild: bool = Field(default=False, description="re-chunk every document first")


class ActivateBody(Body):
    force: bool = Field(default=False, description="activate even if the gate refuses")


class RollbackBody(Body):
    version: int | None = Field(default=None, ge=0, le=MAX_SEQ,
                                description="default: the version active before")


class GateBody(Body):
    queries: list[LabelledQuery] = Field(min_length=1, max_length=10_000)
    k: int = Field(default=5, ge=1, le=200)
    max_drop: float = Field(default=0.0, ge=0.0, le=1.0)


class ConfigBody(Body):
    """Fields left out are kept; `gate: null` removes the gate."""

    mode: PublishMode | None = None
    retention: int | None = Field(default=None, ge=1, le=10_000)
    gate: GateBody | None = None


class DiffOut(VersionDiff):
    added_chunks: int
    removed_chunks: int


@router.get("")
def list_versions(kb_id: str, state: State) -> VersionsOut:
    """State (active, draft, mode, retention, gate), retained versions, latest activations."""
    versions = state.container.versions
    kb = require_kb(state.container, kb_id)
    return VersionsOut(state=versions.state(kb), versions=versions.versions(kb),
                       activations=versions.activations(kb, limit=20))


@router.post("", status_code=201, responses=_CONFLICT)
def seal_version(kb_id: str, body: SealBody, state: State) -> KbVersion:
    """Seal the draft as a new version (`rebuild`: re-chunk every document first)."""
    container = state.container
    kb = require_kb(container, kb_id)
    if body.rebuild:
        sealed = container.versions.rebuild(kb, container.ingestion.reindex, body.note)
    else:
        sealed = container.versions.seal(kb, body.note)
    if sealed is None:
        raise ApiError(409, "no_changes", f"the draft of {kb.name!r} holds no change")
    return sealed


@router.post("/rollback")
def rollback(kb_id: str, body: RollbackBody, state: State) -> ActivationOutcome:
    """Switch back to a retained version (default: the one active before); no gate."""
    kb = require_kb(state.container, kb_id)
    return state.container.versions.rollback(kb, body.version)


@router.get("/diff")
def diff(kb_id: str, state: State, from_seq: OptionalSeq = None, to_seq: OptionalSeq = None
         ) -> DiffOut:
    """Indexed chunks per document added and removed from one version to another, and the
    metadata keys changed (`metadata_keys`; defaults: from the active version to the
    newest)."""
    kb = require_kb(state.container, kb_id)
    result = state.container.versions.diff(kb, from_seq, to_seq)
    return DiffOut(**result.model_dump(), added_chunks=result.added,
                   removed_chunks=result.removed)


@router.put("/config")
def configure(kb_id: str, body: ConfigBody, state: State) -> VersionState:
    """Change the publish mode, the retention or the quality gate of a knowledge base."""
    kb = require_kb(state.container, kb_id)
    changes: dict[str, Any] = {}
    if "gate" in body.model_fields_set:
        changes["gate"] = None if body.gate is None else GateConfig(
            queries=tuple(body.gate.queries), k=body.gate.k, max_drop=body.gate.max_drop)
    return state.container.versions.configure(kb, body.mode, body.retention, **changes)


@router.post("/{seq}/activate", responses=_CONFLICT)
def activate(kb_id: str, seq: Seq, body: ActivateBody, state: State) -> ActivationOutcome:
    """Make `seq` the active version (one atomic switch), after the quality gate."""
    kb = require_kb(state.container, kb_id)
    try:
        return state.container.versions.activate(kb, seq, force=body.force)
    except GateRefused as refused:
        raise ApiError(409, refused.code, str(refused)) from refused


@router.post("/{seq}/check", responses={404: {"model": ErrorBody}})
def check(kb_id: str, seq: Seq, state: State) -> GateReport:
    """The quality gate's report on `seq` against the active version; activates nothing."""
    kb = require_kb(state.container, kb_id)
    report = state.container.versions.check(kb, seq)
    if report is None:
        raise ApiError(404, "no_gate", f"{kb.name!r} has no quality gate")
    return report
