"""The writing half of KB versions: draft commits, sealing, activation and garbage collection.

Every write starts with an UPDATE of the KB's state row: it takes the row lock on PostgreSQL
and the write lock on SQLite before anything is read, so two writers never interleave and a
reader-turned-writer never hits a stale snapshot. Mixed into SqlRepository.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import and_, delete, exists, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import (
    CHUNK_TABLE,
    DocumentRow,
    FaqEntryRow,
    KbActivationRow,
    KbVersionRow,
    KbVersionStateRow,
    chunk_values,
    storable,
    to_utc,
)
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.filters import valid_at
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.domain.versions import (
    ActivationAction,
    Collected,
    DraftCommit,
    DraftMoved,
    GateReport,
    KbVersion,
)

logger = logging.getLogger(__name__)

_IN_BATCH = 500  # bound variables per IN list, as in repository.py
_T = TypeVar("_T")


def batches(items: Sequence[_T], size: int = _IN_BATCH) -> Iterator[Sequence[_T]]:
    """`items` in slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def now() -> datetime:
    return datetime.now(UTC)


def version_from_row(row: KbVersionRow) -> KbVersion:
    """The domain value of a kb_versions row."""
    return KbVersion(
        kb_id=row.kb_id, seq=row.seq, created_at=to_utc(row.created_at), note=row.note,
        chunks=row.chunks, added=row.added, retired=row.retired, settings=row.settings,
    )


def lock_state(session: Session, kb_id: str, draft_seq: int | None = None, changes: int = 0
               ) -> bool:
    """Take the KB's state row lock (first statement of a write); False if no such row.

    With `draft_seq`, only while the draft is still that one (a compare-and-set).
    """
    state = KbVersionStateRow
    query = update(state).where(state.kb_id == kb_id)
    if draft_seq is not None:
        query = query.where(state.draft_seq == draft_seq)
    result = session.execute(
        query.values(draft_changes=state.draft_changes + changes, updated_at=now())
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


class VersionCommitMixin:
    """Draft commits, seals, activations and collection; SqlRepository sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def settings_snapshot(self, session: Session, kb_id: str) -> dict[str, Any]:
        """The KB's effective settings (KbSettingsRepositoryMixin)."""
        raise NotImplementedError

    def commit_draft(
        self, commits: Sequence[DraftCommit], seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> KbVersion | None:
        """Store documents' changes to one KB's draft in one transaction; sealed version if any.

        With `seal` the draft becomes a version in the same transaction (None when nothing
        changed), with `activate` that version becomes the active one too. DraftMoved when
        the draft was sealed or a document's live chunks changed since the change was
        planned; NotFound when a document is gone.
        """
        if not commits:
            return None
        kb_id, draft_seq = commits[0].kb_id, commits[0].draft_seq
        if any(c.kb_id != kb_id or c.draft_seq != draft_seq for c in commits):
            raise ValueError("one commit holds changes to one draft of one knowledge base")
        changes = sum(c.changes for c in commits)
        with storable("chunks"), self._sessions.begin() as session:
            if not lock_state(session, kb_id, draft_seq, changes):
                raise DraftMoved(f"the draft of knowledge base {kb_id!r} is no longer "
                                 f"version {draft_seq}")
            _apply(session, commits)
            sealed = (_seal(session, kb_id, draft_seq, note,
                            self.settings_snapshot(session, kb_id)) if seal else None)
            if sealed is not None and activate:
                _activate(session, kb_id, sealed.seq, "publish", False, None)
            return sealed

    def seal_draft(self, kb_id: str, note: str | None = None, expected_seq: int | None = None
                   ) -> KbVersion | None:
        """Seal the draft as a new version; None when it holds no change (nothing sealed)."""
        with self._sessions.begin() as session:
            if not lock_state(session, kb_id, expected_seq):
                if expected_seq is None:
                    return None  # no state: the KB never had a change
                raise DraftMoved(f"the draft of knowledge base {kb_id!r} was sealed meanwhile")
            seq = session.scalar(
                select(KbVersionStateRow.draft_seq).where(KbVersionStateRow.kb_id == kb_id))
            assert seq is not None
            return _seal(session, kb_id, seq, note, self.settings_snapshot(session, kb_id))

    def activate_version(
        self, kb_id: str, seq: int, action: ActivationAction, forced: bool = False,
        gate: GateReport | None = None,
    ) -> int:
        """Make `seq` the active version in one atomic switch; the version active before."""
        with self._sessions.begin() as session:
            if not lock_state(session, kb_id):
                raise NotFound(f"knowledge base {kb_id!r} has no versions")
            return _activate(session, kb_id, seq, action, forced, gate)

    def collect_versions(self, kb_id: str, retention: int) -> Collected:
        """Drop versions beyond the `retention` newest (the active one always stays), then
        every retired chunk no retained version holds, then retired documents left empty."""
        if retention < 1:
            raise InvalidInput("retention must be at least 1")
        table = CHUNK_TABLE.c
        with self._sessions.begin() as session:
            if not lock_state(session, kb_id):
                return Collected()
            active = session.scalar(
                select(KbVersionStateRow.active_seq).where(KbVersionStateRow.kb_id == kb_id))
            seqs = list(session.scalars(select(KbVersionRow.seq).where(
                KbVersionRow.kb_id == kb_id).order_by(KbVersionRow.seq.desc())))
            retained = {*seqs[:retention], active or 0}
            dropped = sorted(s for s in seqs if s not in retained)
            if dropped:
                session.execute(delete(KbVersionRow).where(
                    KbVersionRow.kb_id == kb_id, KbVersionRow.seq.in_(dropped)))
            retired = session.execute(select(table.id, table.valid_from_seq, table.valid_to_seq)
                                      .where(table.kb_id == kb_id, table.valid_to_seq != 0))
            gone = [row.id for row in retired
                    if not any(valid_at(row.valid_from_seq, row.valid_to_seq, s)
                               for s in retained)]
            for batch in batches(gone):
                session.execute(delete(CHUNK_TABLE).where(table.id.in_(batch)))
            empty = list(session.scalars(select(DocumentRow.id).where(
                DocumentRow.kb_id == kb_id,
                DocumentRow.status == DocumentStatus.RETIRED.value,
                ~exists().where(table.document_id == DocumentRow.id),
            )))
            for batch in batches(empty):
                session.execute(delete(DocumentRow).where(DocumentRow.id.in_(batch)))
            faq_gone = _collect_faq(session, kb_id, retained)
        if dropped or gone or empty or faq_gone:
            logger.info("knowledge base %s: collected versions %s, %d chunks, %d documents, "
                        "%d FAQ entries", kb_id, dropped, len(gone), len(empty), len(faq_gone))
        return Collected(versions=tuple(dropped), chunk_ids=tuple(gone),
                         document_ids=tuple(empty), faq_ids=tuple(faq_gone))

    def ensure_version_state(self, kb_id: str, mode: str, retention: int) -> None:
        """Create the KB's version state with these defaults unless it exists."""
        with self._sessions.begin() as session:
            if session.get(KbVersionStateRow, kb_id) is not None:
                return
        try:
            with self._sessions.begin() as session:
                session.add(KbVersionStateRow(
                    kb_id=kb_id, active_seq=0, draft_seq=1, draft_changes=0, mode=mode,
                    retention=retention, gate=None, updated_at=now()))
        except IntegrityError as exc:
            with self._sessions.begin() as session:
                if session.get(KbVersionStateRow, kb_id) is not None:
                    return  # created by a concurrent writer
            raise NotFound(f"knowledge base {kb_id!r} does not exist") from exc


def _collect_faq(session: Session, kb_id: str, retained: set[int]) -> list[str]:
    """Delete the retired FAQ entries of `kb_id` that no retained version holds; their ids."""
    table = FaqEntryRow.__table__.c
    retired = session.execute(select(table.id, table.valid_from_seq, table.valid_to_seq)
                              .where(table.kb_id == kb_id, table.valid_to_seq != 0))
    gone = [row.id for row in retired
            if not any(valid_at(row.valid_from_seq, row.valid_to_seq, s) for s in retained)]
    for batch in batches(gone):
        session.execute(delete(FaqEntryRow).where(FaqEntryRow.id.in_(batch)))
    return gone


def _apply(session: Session, commits: Sequence[DraftCommit]) -> None:
    """The documents' rows and statuses (the state row is locked by the caller).

    A statement per kind of change for all the documents, not per document: a batch of
    one-line documents paid more for its queries than for its rows.
    """
    table = CHUNK_TABLE.c
    ids = list(dict.fromkeys(c.document_id for c in commits))
    live: dict[str, set[str]] = {document_id: set() for document_id in ids}
    for batch in batches(ids):
        for chunk_id, document_id in session.execute(select(table.id, table.document_id).where(
                table.document_id.in_(batch), table.valid_to_seq == 0)):
            live[document_id].add(chunk_id)
    for commit in commits:
        if live[commit.document_id] != commit.basis:
            raise DraftMoved(f"document {commit.document_id!r} changed meanwhile")
    for batch in batches([chunk_id for c in commits for chunk_id in c.drop]):
        session.execute(delete(CHUNK_TABLE).where(table.id.in_(batch)))
    for batch in batches([chunk_id for c in commits for chunk_id in c.retire]):
        session.execute(update(CHUNK_TABLE).where(table.id.in_(batch))  # one draft for all
                        .values(valid_to_seq=commits[0].draft_seq))
    added = [chunk_values(chunk) for c in commits for chunk in c.add]
    if added:
        session.execute(insert(CHUNK_TABLE), added)
    by_status: dict[DocumentStatus, list[str]] = {}
    for commit in commits:
        by_status.setdefault(commit.status, []).append(commit.document_id)
    for status, document_ids in by_status.items():
        _set_status(session, list(dict.fromkeys(document_ids)), status)


def _set_status(session: Session, document_ids: Sequence[str], status: DocumentStatus) -> None:
    """The documents' new status; NotFound when one of them is gone."""
    values: dict[str, Any] = {"status": status.value, "error": None, "updated_at": now()}
    if status == DocumentStatus.RETIRED:
        # the same bytes may come back as a new document while this one serves old versions
        values["sha256"] = None
    changed = 0
    for batch in batches(document_ids):
        result = session.execute(
            update(DocumentRow).where(DocumentRow.id.in_(batch)).values(**values))
        changed += result.rowcount  # type: ignore[attr-defined]
    if changed != len(document_ids):
        present = {i for batch in batches(document_ids) for i in session.scalars(
            select(DocumentRow.id).where(DocumentRow.id.in_(batch)))}
        gone = next((i for i in document_ids if i not in present), document_ids[0])
        raise NotFound(f"document {gone!r} does not exist")


def _indexed_count(session: Session, kb_id: str, *conditions: Any) -> int:
    table = CHUNK_TABLE.c
    return int(session.scalar(select(func.count()).select_from(CHUNK_TABLE).where(
        table.kb_id == kb_id, table.level == CHILD_LEVEL, *conditions)) or 0)


def _seal(session: Session, kb_id: str, seq: int, note: str | None,
          settings: dict[str, Any]) -> KbVersion | None:
    """Turn draft `seq` into a sealed version (the state row is locked by the caller) that
    records the KB's effective `settings`."""
    state = session.get(KbVersionStateRow, kb_id)
    assert state is not None and state.draft_seq == seq
    if state.draft_changes == 0:
        return None
    table = CHUNK_TABLE.c
    valid = and_(table.valid_from_seq <= seq,
                 or_(table.valid_to_seq == 0, table.valid_to_seq > seq))
    row = KbVersionRow(
        kb_id=kb_id, seq=seq, created_at=now(), note=note,
        chunks=_indexed_count(session, kb_id, valid),
        added=_indexed_count(session, kb_id, table.valid_from_seq == seq),
        retired=_indexed_count(session, kb_id, table.valid_to_seq == seq),
        settings=settings,
        # the metadata this version was sealed with: a search pinned to it filters on it
        meta={doc_id: meta for doc_id, meta in session.execute(
            select(DocumentRow.id, DocumentRow.meta).where(DocumentRow.kb_id == kb_id))
            if meta},
    )
    session.add(row)
    state.draft_seq = seq + 1
    state.draft_changes = 0
    session.flush()
    return version_from_row(row)


def _activate(
    session: Session, kb_id: str, seq: int, action: ActivationAction, forced: bool,
    gate: GateReport | None,
) -> int:
    """Switch the active version (the state row is locked by the caller); the previous one."""
    state = session.get(KbVersionStateRow, kb_id)
    assert state is not None
    if session.get(KbVersionRow, (kb_id, seq)) is None:
        raise NotFound(f"version {seq} of knowledge base {kb_id!r} is not retained")
    previous = state.active_seq
    state.active_seq = seq
    session.add(KbActivationRow(
        id=uuid.uuid4().hex, kb_id=kb_id, action=action, from_seq=previous, to_seq=seq,
        forced=forced, gate=None if gate is None else gate.model_dump(mode="json"),
        created_at=now(),
    ))
    return previous
