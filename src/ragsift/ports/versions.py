"""Ports of knowledge-base versions: what a search reads, and the store that writes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ragsift.domain.models import Chunk
from ragsift.domain.versions import (
    Activation,
    ActivationAction,
    Collected,
    DraftCommit,
    GateConfig,
    GateReport,
    KbVersion,
    VersionDiff,
    VersionState,
)
from ragsift.ports.repository import Repository


class VersionReader(Protocol):
    """What a search reads of KB versions: which version, and the chunks valid in it."""

    def searchable_version(self, kb_id: str, pinned: int | None = None) -> int:
        """The active version, or `pinned` when it is retained (else NotFound)."""
        ...

    def get_chunks_at(
        self, kb_id: str, chunk_ids: Sequence[str], version_seq: int
    ) -> list[tuple[Chunk, str]]:
        """(chunk, filename) for the chunks valid in `version_seq` whose document may be shown
        (READY, or RETIRED: kept for older versions), in the order given."""
        ...

    def searchable_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that is READY or RETIRED in `kb_id`."""
        ...

    def version_metadata(self, kb_id: str, seq: int) -> dict[str, dict[str, Any]] | None:
        """Document id -> metadata as version `seq` was sealed with it (documents without
        any left out); None when the version kept none (sealed before 0016, or not sealed)."""
        ...


class VersionStore(Repository, VersionReader, Protocol):
    """The relational store with KB versions: state, draft commits, seals, activations."""

    def get_version_state(self, kb_id: str) -> VersionState | None: ...

    def ensure_version_state(self, kb_id: str, mode: str, retention: int) -> None: ...

    def configure_versions(
        self, kb_id: str, mode: str | None = None, retention: int | None = None,
        gate: GateConfig | None = ...,
    ) -> VersionState:
        """Change the policy; `gate` left out keeps the gate, None clears it."""
        ...

    def list_versions(self, kb_id: str) -> list[KbVersion]: ...

    def get_version(self, kb_id: str, seq: int) -> KbVersion | None: ...

    def list_activations(self, kb_id: str, limit: int = 50) -> list[Activation]: ...

    def version_diff(self, kb_id: str, from_seq: int, to_seq: int) -> VersionDiff: ...

    def commit_draft(
        self, commits: Sequence[DraftCommit], seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> KbVersion | None:
        """Store documents' changes in one transaction; with `seal` (and `activate`) the
        draft becomes a version (the active one). DraftMoved when the plan is outdated."""
        ...

    def seal_draft(
        self, kb_id: str, note: str | None = None, expected_seq: int | None = None
    ) -> KbVersion | None: ...

    def activate_version(
        self, kb_id: str, seq: int, action: ActivationAction, forced: bool = False,
        gate: GateReport | None = None,
    ) -> int:
        """One atomic switch of the active version; returns the version active before."""
        ...

    def collect_versions(self, kb_id: str, retention: int) -> Collected: ...
