"""VersionService: seal the draft, activate behind the quality gate, roll back, diff, collect.

Publish modes: in `auto` (the default) every committed change seals and activates a version
at once (behind the gate when the KB registered one), so what was ingested is found right
away; in `staged` changes wait in the draft until `seal` and an explicit `activate`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ragsift.config import Settings
from ragsift.domain.assets import asset_object_key
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.models import DocumentStatus, KnowledgeBase
from ragsift.domain.versions import (
    Activation,
    ActivationAction,
    ActivationOutcome,
    Collected,
    GateConfig,
    GateRefused,
    GateReport,
    KbVersion,
    PublishMode,
    VersionDiff,
    VersionState,
)
from ragsift.ports import ObjectStore, SearchIndex, VersionStore
from ragsift.retrieval.service import RetrievalService
from ragsift.versions.gate import run_gate
from ragsift.versions.writer import DraftWriter

logger = logging.getLogger(__name__)

_KEEP: Any = ...  # "leave the gate as it is" in configure()


class VersionService:
    """Everything about a KB's versions except writing documents (that is DraftWriter)."""

    def __init__(
        self, store: VersionStore, index: SearchIndex, retrieval: RetrievalService,
        objects: ObjectStore, writer: DraftWriter, settings: Settings,
        faq_index: SearchIndex | None = None,
    ) -> None:
        self._store = store
        self._index = index
        self._faq_index = faq_index  # where collected FAQ entries are removed from
        self._retrieval = retrieval
        self._objects = objects
        self._writer = writer
        self._settings = settings
        writer.on_commit = self._after_commit

    # ---- reading --------------------------------------------------------------------------

    def state(self, kb: KnowledgeBase) -> VersionState:
        """The KB's version state (created with the defaults on first use)."""
        return self._writer.state(kb.id)

    def versions(self, kb: KnowledgeBase) -> list[KbVersion]:
        """The retained versions, oldest first."""
        return self._store.list_versions(kb.id)

    def activations(self, kb: KnowledgeBase, limit: int = 50) -> list[Activation]:
        """The latest switches of the active version, newest first."""
        return self._store.list_activations(kb.id, limit)

    def diff(self, kb: KnowledgeBase, from_seq: int | None = None, to_seq: int | None = None
             ) -> VersionDiff:
        """Chunks per document added and removed from `from_seq` (default: the active version)
        to `to_seq` (default: the newest retained version)."""
        state = self.state(kb)
        newest = max((v.seq for v in self.versions(kb)), default=state.active_seq)
        start = state.active_seq if from_seq is None else from_seq
        end = newest if to_seq is None else to_seq
        for seq in (start, end):
            self._require_retained(kb, seq, state)
        return self._store.version_diff(kb.id, start, end)

    # ---- policy ---------------------------------------------------------------------------

    def configure(
        self, kb: KnowledgeBase, mode: PublishMode | None = None, retention: int | None = None,
        gate: GateConfig | None = _KEEP,
    ) -> VersionState:
        """Change the publish mode, the retention or the gate (None removes the gate).

        Switching to auto publishes what the draft holds; a lower retention collects now.
        """
        if retention is not None and retention < 1:
            raise InvalidInput("retention must be at least 1")
        before = self.state(kb)
        state = (self._store.configure_versions(kb.id, mode, retention)
                 if gate is _KEEP else
                 self._store.configure_versions(kb.id, mode, retention, gate))
        if state.mode == "auto" and before.mode == "staged" and state.draft_changes:
            sealed = self._store.seal_draft(kb.id, note="published on switching to auto")
            self._after_commit(kb.id, sealed)
        self.collect(kb.id)
        return self.state(kb)

    # ---- versions -------------------------------------------------------------------------

    def seal(self, kb: KnowledgeBase, note: str | None = None) -> KbVersion | None:
        """Seal the draft as a new version; None when the draft holds no change.

        In auto mode the new version is published (behind the gate) as every change is.
        """
        state = self.state(kb)
        sealed = self._store.seal_draft(kb.id, note=note)
        if sealed is not None and state.mode == "auto":
            self._after_commit(kb.id, sealed)
        return sealed

    def metadata_changed(self, kb: KnowledgeBase) -> KbVersion | None:
        """A document's metadata changed (it counts as a change of the draft): in auto mode it
        is sealed and published now, as every other change is; staged, it waits for `seal`."""
        state = self._store.get_version_state(kb.id)
        if state is None or state.mode != "auto" or not state.draft_changes:
            return None
        return self.seal(kb, note="metadata changed")

    def rebuild(self, kb: KnowledgeBase, reindex: Callable[[str], object],
                note: str | None = None) -> KbVersion | None:
        """Re-chunk every document from its original into the draft, then seal it.

        Unchanged chunks are shared with the versions before, so only what the chunking
        changed is embedded; `reindex` is IngestionService.reindex.
        """
        for document in self._store.list_documents(kb.id, DocumentStatus.READY):
            reindex(document.id)
        return self.seal(kb, note or "full rebuild")

    def check(self, kb: KnowledgeBase, seq: int) -> GateReport | None:
        """The gate's report on `seq` against the active version; None without a gate."""
        state = self.state(kb)
        self._require_retained(kb, seq, state)
        if state.gate is None:
            return None
        return run_gate(
            self._retrieval, kb.id, self._store.list_documents(kb.id), state.gate, seq,
            state.active_seq, self._settings.mode, self._settings.fusion,
        )

    def activate(self, kb: KnowledgeBase, seq: int, force: bool = False,
                 action: ActivationAction = "activate") -> ActivationOutcome:
        """Make `seq` the active version: one atomic switch, behind the gate.

        GateRefused (with the report) when the gate refuses and `force` is off; with
        `force` the activation is recorded as forced, with the report.
        """
        state = self.state(kb)
        if seq == state.active_seq:
            raise InvalidInput(f"version {seq} is already active")
        report = self.check(kb, seq)
        if report is not None and not report.passed and not force:
            raise GateRefused(
                f"the quality gate refused version {seq} of {kb.name!r}: "
                + "; ".join(report.reasons) + " (--force activates it anyway)", report)
        previous = self._store.activate_version(kb.id, seq, action, forced=force, gate=report)
        self.collect(kb.id)
        return ActivationOutcome(kb_id=kb.id, activated=True, from_seq=previous, to_seq=seq,
                                 forced=force, gate=report)

    def rollback(self, kb: KnowledgeBase, seq: int | None = None) -> ActivationOutcome:
        """Switch back to `seq`, or to the version active before the current one; no gate."""
        state = self.state(kb)
        target = self._previous_active(kb, state) if seq is None else seq
        if target == state.active_seq:
            raise InvalidInput(f"version {target} is already active")
        self._require_retained(kb, target, state)
        previous = self._store.activate_version(kb.id, target, "rollback")
        self.collect(kb.id)
        return ActivationOutcome(kb_id=kb.id, activated=True, from_seq=previous, to_seq=target)

    # ---- garbage collection ---------------------------------------------------------------

    def collect(self, kb_id: str) -> Collected:
        """Drop versions beyond the retention: their retired chunks leave facts and indexes."""
        state = self._store.get_version_state(kb_id)
        if state is None:
            return Collected()
        images = self._store.kb_images(kb_id)
        collected = self._store.collect_versions(kb_id, state.retention)
        # the facts are gone first: index rows left by a failure here are dropped by the
        # re-check of hits, and the next collection does not see them again
        if collected.chunk_ids:
            self._index.delete_chunks(collected.chunk_ids)
        if collected.faq_ids and self._faq_index is not None:
            self._faq_index.delete_chunks(collected.faq_ids)
        for document_id in collected.document_ids:
            self._index.delete_document(document_id)
            self._objects.delete_prefix(f"{kb_id}/{document_id}")
        if images:  # images only collected chunks named go with them
            self._store.sweep_assets(kb_id)
            for _, sha256 in self._store.unused_images(images):
                self._objects.delete_prefix(asset_object_key(kb_id, sha256))
        return collected

    def forget_kb(self, kb: KnowledgeBase) -> None:
        """Remove every document of a KB being deleted, whatever versions hold it."""
        for document in self._store.list_documents(kb.id):
            self._index.delete_chunks([c.id for c in self._store.list_chunks(document.id)])
            self._index.delete_document(document.id)
            self._objects.delete_prefix(f"{kb.id}/{document.id}")
            self._store.delete_document(document.id)
        self._objects.delete_prefix(f"assets/{kb.id}/")

    # ---- internals ------------------------------------------------------------------------

    def _after_commit(self, kb_id: str, sealed: KbVersion | None) -> None:
        """After a change reached the draft: publish (auto mode) and collect."""
        if sealed is None:
            return
        state = self._store.get_version_state(kb_id)
        kb = self._store.get_kb(kb_id)
        if state is None or kb is None:
            return
        if state.active_seq != sealed.seq:  # sealed but not activated: the gate decides
            try:
                self.activate(kb, sealed.seq, action="publish")
            except GateRefused as refused:  # stays a sealed candidate
                logger.warning("version %d of %s was sealed but not activated: %s",
                               sealed.seq, kb.name, refused)
            return
        self.collect(kb_id)

    def _previous_active(self, kb: KnowledgeBase, state: VersionState) -> int:
        for activation in self._store.list_activations(kb.id, limit=1):
            if activation.to_seq == state.active_seq and activation.from_seq != 0:
                return activation.from_seq
        raise InvalidInput(f"{kb.name!r} has no earlier active version to roll back to; "
                           "name the version")

    def _require_retained(self, kb: KnowledgeBase, seq: int, state: VersionState) -> None:
        if seq != state.active_seq and self._store.get_version(kb.id, seq) is None:
            retained = ", ".join(str(v.seq) for v in self.versions(kb)) or "none"
            raise NotFound(f"version {seq} of {kb.name!r} is not retained (retained: "
                           f"{retained}; active: {state.active_seq})")
