"""Knowledge-base versions: state, sealed versions, activations, the quality gate's report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ragsift.domain.errors import InvalidInput, RagsiftError
from ragsift.domain.models import Chunk, DocumentStatus, Frozen

PublishMode = Literal["auto", "staged"]
ActivationAction = Literal["publish", "activate", "rollback"]


class LabelledQuery(Frozen):
    """One line of a gate's query set: the evaluation JSONL format {query, relevant}."""

    query: str = Field(min_length=1)
    # document id or filename (or corpus id) -> relevance grade
    relevant: dict[str, int]


class GateConfig(Frozen):
    """The labelled queries a KB registered, k, and the largest drop allowed (absolute)."""

    queries: tuple[LabelledQuery, ...] = Field(min_length=1)
    k: int = Field(default=5, ge=1, le=200)
    max_drop: float = Field(default=0.0, ge=0.0, le=1.0)


class VersionState(Frozen):
    """Where a KB stands: the active version, the draft being built, and its policy.

    Changes go into the draft (`draft_seq`); sealing it makes version `draft_seq`.
    `active_seq` 0 = nothing published yet (only chunks valid in every version are seen).
    """

    kb_id: str
    active_seq: int = 0
    draft_seq: int = 1
    draft_changes: int = 0
    mode: PublishMode = "auto"
    retention: int = Field(default=1, ge=1)
    gate: GateConfig | None = None


class KbVersion(Frozen):
    """A sealed version: immutable, searchable, activatable while retained."""

    kb_id: str
    seq: int
    created_at: datetime
    note: str | None = None
    chunks: int = 0  # indexed (child) chunks valid in this version
    added: int = 0  # indexed chunks this version added
    retired: int = 0  # indexed chunks this version retired
    # the KB's effective settings when sealed (ragsift/kb_settings.py; None: sealed before
    # versions recorded them)
    settings: dict[str, Any] | None = None


class QueryDiff(Frozen):
    """One labelled query whose Recall@k or MRR@k differs between the two versions."""

    query_id: str
    query: str
    recall_active: float
    recall_candidate: float
    mrr_active: float
    mrr_candidate: float


class GateReport(Frozen):
    """The quality gate's verdict on a candidate version against the active one."""

    kb_id: str
    candidate_seq: int
    active_seq: int
    k: int
    max_drop: float
    queries: int
    recall_active: float
    recall_candidate: float
    mrr_active: float
    mrr_candidate: float
    passed: bool
    reasons: tuple[str, ...] = ()
    changed: tuple[QueryDiff, ...] = ()


class Activation(Frozen):
    """One switch of the active version, as recorded."""

    kb_id: str
    action: ActivationAction
    from_seq: int
    to_seq: int
    forced: bool = False
    gate: GateReport | None = None
    created_at: datetime


class ActivationOutcome(Frozen):
    """What an activation did: switched (or refused by the gate), and the gate's report."""

    kb_id: str
    activated: bool
    from_seq: int
    to_seq: int
    forced: bool = False
    gate: GateReport | None = None


class DocumentChange(Frozen):
    """Indexed chunks of one document added and removed between two versions, and the keys
    of its metadata that differ (set, removed or changed; a metadata-only change has no
    chunks)."""

    document_id: str
    filename: str
    added: int
    removed: int
    metadata_keys: tuple[str, ...] = ()


class VersionDiff(Frozen):
    kb_id: str
    from_seq: int
    to_seq: int
    documents: tuple[DocumentChange, ...] = ()
    # False when a version was sealed without its metadata (before migration 0016): the
    # metadata changes are then unknown and not listed
    metadata_compared: bool = True

    @property
    def added(self) -> int:
        return sum(d.added for d in self.documents)

    @property
    def removed(self) -> int:
        return sum(d.removed for d in self.documents)


def metadata_changes(before: Mapping[str, Mapping[str, Any]],
                     after: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Document id -> the keys whose values differ between two sealed metadata snapshots
    (document id -> metadata; a document absent has none), for the documents with any."""
    changed: dict[str, tuple[str, ...]] = {}
    for doc_id in before.keys() | after.keys():
        old, new = before.get(doc_id, {}), after.get(doc_id, {})
        keys = sorted(k for k in old.keys() | new.keys() if k not in old or k not in new
                      # a type is part of the value: 1 and true differ (Python says equal)
                      or old[k] != new[k] or type(old[k]) is not type(new[k]))
        if keys:
            changed[doc_id] = tuple(keys)
    return changed


class Collected(Frozen):
    """What garbage collection removed: versions, retired chunks, retired documents and
    retired FAQ entries."""

    versions: tuple[int, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    faq_ids: tuple[str, ...] = ()


class DraftMoved(RagsiftError):
    """The draft was sealed, or the document changed, after a change to it was planned.

    The writer plans again from the new state; nothing of the planned change was stored.
    """

    code = "draft_moved"


class GateRefused(InvalidInput):
    """The quality gate refused to activate a version (CLI exit 2, HTTP 409)."""

    code = "gate_refused"

    def __init__(self, message: str, report: GateReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class DraftCommit:
    """One document's change to the draft, planned against its rows, stored atomically.

    The commit checks that the draft is still `draft_seq` and that the document's live
    chunks are still `basis`; otherwise it raises DraftMoved and stores nothing.
    """

    kb_id: str
    document_id: str
    draft_seq: int
    basis: frozenset[str]
    add: tuple[Chunk, ...] = ()  # valid_from_seq == draft_seq
    retire: tuple[str, ...] = ()  # live chunks that get valid_to_seq = draft_seq
    drop: tuple[str, ...] = ()  # chunks only the draft held: deleted outright
    status: DocumentStatus = DocumentStatus.READY

    @property
    def changes(self) -> int:
        return len(self.add) + len(self.retire) + len(self.drop)
