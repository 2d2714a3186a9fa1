"""KB versions in the relational store: the version a search reads, hydration at a version,
state and policy, listings and diffs. The writes are in version_commits.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, and_, bindparam, or_, select

from ragsift.adapters.sql.chunk_queries import chunks_with_filenames, documents_in
from ragsift.adapters.sql.orm import (
    CHUNK_TABLE,
    DocumentRow,
    KbActivationRow,
    KbVersionRow,
    KbVersionStateRow,
    to_utc,
)
from ragsift.adapters.sql.version_commits import (
    VersionCommitMixin,
    batches,
    lock_state,
    version_from_row,
)
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.filters import valid_at
from ragsift.domain.models import CHILD_LEVEL, Chunk, DocumentStatus
from ragsift.domain.versions import (
    Activation,
    DocumentChange,
    GateConfig,
    GateReport,
    KbVersion,
    VersionDiff,
    VersionState,
    metadata_changes,
)

# A document whose chunks a version may show: READY, or deleted from the draft but kept for
# the versions before (RETIRED). The chunk's own window decides which versions.
SEARCHABLE = (DocumentStatus.READY.value, DocumentStatus.RETIRED.value)
UNSET: Any = object()
_ACTIVE_SEQ = select(KbVersionStateRow.active_seq).where(
    KbVersionStateRow.kb_id == bindparam("kb_id"))


def _state_from_row(row: KbVersionStateRow) -> VersionState:
    gate = None
    if row.gate is not None:
        try:
            gate = GateConfig.model_validate(row.gate)
        except ValidationError as exc:  # only a hand-edited row gets here
            raise InvalidInput(f"the stored quality gate of {row.kb_id!r} is invalid: {exc}"
                               ) from exc
    return VersionState(
        kb_id=row.kb_id, active_seq=row.active_seq, draft_seq=row.draft_seq,
        draft_changes=row.draft_changes, mode=row.mode,  # type: ignore[arg-type]
        retention=row.retention, gate=gate,
    )


class VersionRepositoryMixin(VersionCommitMixin):
    """The VersionReader port and the version bookkeeping; mixed into SqlRepository."""

    _engine: Engine  # set by SqlRepository, for the plain selects of the READY re-check

    # ---- what retrieval reads ---------------------------------------------------------

    def searchable_version(self, kb_id: str, pinned: int | None = None) -> int:
        """The version a search of `kb_id` reads: the active one, or `pinned` if retained.

        One read of the state row: a search takes it once, at its start. A KB that never
        published has active version 0 (only chunks valid in every version).
        """
        with self._engine.connect() as connection:  # the common case: one plain select
            state = connection.execute(_ACTIVE_SEQ, {"kb_id": kb_id}).scalar()
        active = 0 if state is None else int(state)
        if pinned is None or pinned == active:
            return active
        with self._sessions.begin() as session:
            if session.get(KbVersionRow, (kb_id, pinned)) is None:
                retained = session.scalars(select(KbVersionRow.seq).where(
                    KbVersionRow.kb_id == kb_id).order_by(KbVersionRow.seq))
                names = ", ".join(str(seq) for seq in retained) or "none"
                raise NotFound(f"version {pinned} of knowledge base {kb_id!r} is not retained "
                               f"(retained: {names}; active: {active})")
            return pinned

    def get_chunks_at(
        self, kb_id: str, chunk_ids: Sequence[str], version_seq: int
    ) -> list[tuple[Chunk, str]]:
        """(chunk, filename) for the chunks of version `version_seq` among `chunk_ids`, in order.

        The READY re-check at a version: the chunk row must exist and be valid in that version,
        and its document must be READY or RETIRED in `kb_id`.
        """
        with self._engine.connect() as connection:
            return chunks_with_filenames(
                connection, kb_id, chunk_ids, SEARCHABLE,
                version_seq=version_seq,
            )

    def searchable_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that versions of `kb_id` may show right now."""
        with self._engine.connect() as connection:
            return documents_in(connection, kb_id, document_ids, SEARCHABLE)

    def version_metadata(self, kb_id: str, seq: int) -> dict[str, dict[str, Any]] | None:
        """Document id -> metadata as version `seq` was sealed with it; None: not kept."""
        with self._sessions.begin() as session:
            row = session.get(KbVersionRow, (kb_id, seq))
            return None if row is None or row.meta is None else dict(row.meta)

    # ---- state and policy -------------------------------------------------------------

    def get_version_state(self, kb_id: str) -> VersionState | None:
        """The KB's version state, or None when it never had a versioned change."""
        with self._sessions.begin() as session:
            row = session.get(KbVersionStateRow, kb_id)
            return None if row is None else _state_from_row(row)

    def configure_versions(
        self, kb_id: str, mode: str | None = None, retention: int | None = None,
        gate: GateConfig | None = UNSET,
    ) -> VersionState:
        """Change the publish mode, retention or quality gate (None clears the gate)."""
        with self._sessions.begin() as session:
            if not lock_state(session, kb_id):
                raise NotFound(f"knowledge base {kb_id!r} has no version state")
            row = session.get(KbVersionStateRow, kb_id)
            assert row is not None
            if mode is not None:
                row.mode = mode
            if retention is not None:
                row.retention = retention
            if gate is not UNSET:
                row.gate = None if gate is None else gate.model_dump(mode="json")
            session.flush()
            return _state_from_row(row)

    # ---- listings -----------------------------------------------------------------------

    def list_versions(self, kb_id: str) -> list[KbVersion]:
        """The retained sealed versions of `kb_id`, oldest first."""
        with self._sessions.begin() as session:
            rows = session.scalars(select(KbVersionRow).where(
                KbVersionRow.kb_id == kb_id).order_by(KbVersionRow.seq))
            return [version_from_row(row) for row in rows]

    def get_version(self, kb_id: str, seq: int) -> KbVersion | None:
        with self._sessions.begin() as session:
            row = session.get(KbVersionRow, (kb_id, seq))
            return None if row is None else version_from_row(row)

    def list_activations(self, kb_id: str, limit: int = 50) -> list[Activation]:
        """The latest switches of the active version, newest first."""
        with self._sessions.begin() as session:
            rows = session.scalars(
                select(KbActivationRow).where(KbActivationRow.kb_id == kb_id)
                .order_by(KbActivationRow.created_at.desc(), KbActivationRow.id).limit(limit))
            return [
                Activation(
                    kb_id=row.kb_id, action=row.action,  # type: ignore[arg-type]
                    from_seq=row.from_seq, to_seq=row.to_seq, forced=row.forced,
                    gate=None if row.gate is None else GateReport.model_validate(row.gate),
                    created_at=to_utc(row.created_at),
                )
                for row in rows
            ]

    def version_diff(self, kb_id: str, from_seq: int, to_seq: int) -> VersionDiff:
        """Indexed chunks per document that `to_seq` adds and removes compared to `from_seq`."""
        low, high = sorted((from_seq, to_seq))
        table = CHUNK_TABLE.c
        changed = or_(
            and_(table.valid_from_seq > low, table.valid_from_seq <= high),
            and_(table.valid_to_seq > low, table.valid_to_seq <= high),
        )
        counts: dict[str, list[int]] = {}
        with self._sessions.begin() as session:
            rows = session.execute(
                select(table.document_id, table.valid_from_seq, table.valid_to_seq).where(
                    table.kb_id == kb_id, table.level == CHILD_LEVEL, changed))
            for row in rows:
                before = valid_at(row.valid_from_seq, row.valid_to_seq, from_seq)
                after = valid_at(row.valid_from_seq, row.valid_to_seq, to_seq)
                if before != after:
                    counts.setdefault(row.document_id, [0, 0])[0 if after else 1] += 1
            snapshots = [session.get(KbVersionRow, (kb_id, seq)) for seq in (from_seq, to_seq)]
            # the sealed snapshots (0016): NULL on a version sealed before, and none for
            # version 0 (nothing sealed yet: no metadata)
            compared = all(row is None or row.meta is not None for row in snapshots)
            keys = metadata_changes(*[{} if row is None or row.meta is None else row.meta
                                      for row in snapshots]) if compared else {}
            names: dict[str, str] = {}
            for batch in batches(sorted(counts.keys() | keys.keys())):
                query = select(DocumentRow.id, DocumentRow.filename).where(
                    DocumentRow.id.in_(batch))
                names.update({row.id: row.filename for row in session.execute(query)})
        documents = tuple(
            DocumentChange(document_id=doc_id, filename=names.get(doc_id, "?"),
                           added=counts.get(doc_id, [0, 0])[0],
                           removed=counts.get(doc_id, [0, 0])[1],
                           metadata_keys=keys.get(doc_id, ()))
            for doc_id in sorted(counts.keys() | keys.keys(),
                                 key=lambda doc_id: (names.get(doc_id, ""), doc_id))
        )
        return VersionDiff(kb_id=kb_id, from_seq=from_seq, to_seq=to_seq, documents=documents,
                           metadata_compared=compared)
