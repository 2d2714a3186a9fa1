"""The FAQ part of the Repository port: versioned commits into a KB's draft, dedupe by content
key among the live entries, reads in the order asked.

Every write starts with the UPDATE of the KB's version state row (lock_state), as document
commits do: it takes the row lock on PostgreSQL and the write lock on SQLite before anything is
read, so two writers of one KB never interleave and "one live entry per key" needs no unique
constraint (a retired entry kept for older versions may share its key with a live one).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import (
    FaqEntryRow,
    KnowledgeBaseRow,
    faq_from_row,
    storable,
    to_utc,
)
from ragsift.adapters.sql.version_commits import _activate, _seal, lock_state
from ragsift.domain.errors import NotFound
from ragsift.domain.faq import FaqCommit, FaqCommitted, FaqConflict, FaqEntry
from ragsift.domain.versions import DraftMoved

logger = logging.getLogger(__name__)

_IN_BATCH = 500  # bound variables per IN list, as in repository.py
_FAQ_TABLE = FaqEntryRow.metadata.tables[FaqEntryRow.__tablename__]


def _batches(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_BATCH):
        yield items[start : start + _IN_BATCH]


def _unique(entries: Iterable[FaqEntry]) -> list[FaqEntry]:
    """The first entry of each (kb, key), in order."""
    seen: dict[tuple[str, str], FaqEntry] = {}
    for entry in entries:
        seen.setdefault((entry.kb_id, entry.sha256), entry)
    return list(seen.values())


def _live_keys(session: Session, kb_id: str, keys: Sequence[str],
               leaving: frozenset[str] = frozenset()) -> dict[str, str]:
    """key -> id of the live entries of `kb_id` with these keys, except the `leaving` ids."""
    table = _FAQ_TABLE.c
    found: dict[str, str] = {}
    for batch in _batches(list(dict.fromkeys(keys))):
        rows = session.execute(select(table.sha256, table.id).where(
            table.kb_id == kb_id, table.valid_to_seq == 0, table.sha256.in_(batch)))
        found.update((row.sha256, row.id) for row in rows if row.id not in leaving)
    return found


def _check_targets(session: Session, commit: FaqCommit) -> None:
    """Every retired or dropped entry is still live in the KB, from the version planned."""
    table = _FAQ_TABLE.c
    wanted = [*commit.retire, *commit.drop]
    rows: dict[str, Any] = {}
    for batch in _batches(wanted):
        rows.update((row.id, row) for row in session.execute(
            select(table.id, table.kb_id, table.valid_from_seq, table.valid_to_seq)
            .where(table.id.in_(batch))))
    for faq_id in wanted:
        row = rows.get(faq_id)
        draft_only = faq_id in commit.drop
        if (row is None or row.kb_id != commit.kb_id or row.valid_to_seq != 0
                or (row.valid_from_seq == commit.draft_seq) != draft_only):
            raise DraftMoved(f"FAQ entry {faq_id!r} changed meanwhile")


_COUNT = select(func.count()).select_from(FaqEntryRow).where(
    FaqEntryRow.kb_id == bindparam("kb_id"))
_LIVE_FAQ_COUNT = _COUNT.where(FaqEntryRow.valid_to_seq == 0)
_FAQ_COUNT_AT = _COUNT.where(
    FaqEntryRow.valid_from_seq <= bindparam("seq"),
    (FaqEntryRow.valid_to_seq == 0) | (FaqEntryRow.valid_to_seq > bindparam("seq")),
)


class FaqRepositoryMixin:
    """FAQ entries in the relational store; mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]
    _engine: Engine

    def settings_snapshot(self, session: Session, kb_id: str) -> dict[str, Any]:
        """The KB's effective settings (KbSettingsRepositoryMixin)."""
        raise NotImplementedError

    # ---- writes ---------------------------------------------------------------------------

    def commit_faq(
        self, commit: FaqCommit, seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> FaqCommitted:
        """Store FAQ changes to a KB's draft in one transaction (see FaqCommit).

        With `seal` the draft becomes a version in the same transaction when anything
        changed, with `activate` that version becomes the active one too. DraftMoved when
        the plan is outdated; FaqConflict when a `strict` add finds its key live.
        """
        table = _FAQ_TABLE.c
        with storable("FAQ entries"), self._sessions.begin() as session:
            if not lock_state(session, commit.kb_id, commit.draft_seq):
                raise DraftMoved(f"the draft of knowledge base {commit.kb_id!r} is no longer "
                                 f"version {commit.draft_seq}")
            _check_targets(session, commit)
            leaving = frozenset((*commit.retire, *commit.drop))
            wanted = _unique(commit.add)
            live = _live_keys(session, commit.kb_id, [e.sha256 for e in wanted], leaving)
            fresh = [entry for entry in wanted if entry.sha256 not in live]
            if commit.strict and len(fresh) < len(commit.add):
                taken = next(live[e.sha256] for e in commit.add if e.sha256 in live)
                raise FaqConflict(f"an entry with the same question, answer and scope is "
                                  f"already in the knowledge base: {taken!r}")
            for batch in _batches(commit.drop):
                session.execute(delete(_FAQ_TABLE).where(table.id.in_(batch)))
            for batch in _batches(commit.retire):
                session.execute(update(_FAQ_TABLE).where(table.id.in_(batch))
                                .values(valid_to_seq=commit.draft_seq))
            if fresh:
                session.execute(insert(_FAQ_TABLE), _values(fresh))
            changes = len(fresh) + len(commit.retire) + len(commit.drop)
            if not changes:
                return FaqCommitted(added=())
            lock_state(session, commit.kb_id, changes=changes)
            sealed = (_seal(session, commit.kb_id, commit.draft_seq, note,
                            self.settings_snapshot(session, commit.kb_id)) if seal else None)
            if sealed is not None and activate:
                _activate(session, commit.kb_id, sealed.seq, "publish", False, None)
        logger.debug("FAQ of %s: %d added, %d retired, %d dropped in draft %d", commit.kb_id,
                     len(fresh), len(commit.retire), len(commit.drop), commit.draft_seq)
        return FaqCommitted(added=tuple(entry.id for entry in fresh), sealed=sealed)

    def add_faq_entries(self, entries: Sequence[FaqEntry]) -> int:
        """Store the entries as they are (their windows included), outside any draft; a live
        entry whose key is live in its KB already, or an entry whose id is taken, is skipped.
        How many were added.

        Entries without `created_at` get the insertion time, one microsecond apart, so
        listing keeps the order they came in.
        """
        unique = _unique(entries)
        if not unique:
            return 0
        try:
            with storable("FAQ entries"):
                return self._insert_new(unique)
        except IntegrityError as exc:
            missing = sorted({e.kb_id for e in unique if not self._kb_exists(e.kb_id)})
            if missing:
                raise NotFound(f"knowledge base {missing[0]!r} does not exist") from exc
            # A concurrent writer stored some of the same ids in between: look again.
            logger.info("FAQ insert raced with another writer; retrying once")
            with storable("FAQ entries"):
                return self._insert_new(unique)

    def _insert_new(self, entries: list[FaqEntry]) -> int:
        table = _FAQ_TABLE.c
        with self._sessions.begin() as session:
            by_kb: dict[str, list[FaqEntry]] = {}
            for entry in entries:
                by_kb.setdefault(entry.kb_id, []).append(entry)
            for kb_id in sorted(by_kb):
                lock_state(session, kb_id)  # serialises with versioned writers where it can
            taken_ids: set[str] = set()
            for batch in _batches([e.id for e in entries]):
                taken_ids.update(session.scalars(select(table.id).where(table.id.in_(batch))))
            fresh: list[FaqEntry] = []
            for kb_id, group in by_kb.items():
                live = _live_keys(session, kb_id, [e.sha256 for e in group if e.live])
                fresh += [e for e in group if e.id not in taken_ids
                          and not (e.live and e.sha256 in live)]
            if fresh:
                session.execute(insert(_FAQ_TABLE), _values(fresh))
        logger.debug("stored %d of %d FAQ entries", len(fresh), len(entries))
        return len(fresh)

    def delete_faq_entries(self, kb_id: str) -> int:
        """Remove every FAQ entry of `kb_id`, of every version; returns how many were removed."""
        with self._sessions.begin() as session:
            result = session.execute(delete(FaqEntryRow).where(FaqEntryRow.kb_id == kb_id))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def _kb_exists(self, kb_id: str) -> bool:
        with self._sessions.begin() as session:
            return session.get(KnowledgeBaseRow, kb_id) is not None

    # ---- reads ----------------------------------------------------------------------------

    def get_faq_entries(self, ids: Sequence[str]) -> list[FaqEntry]:
        """The entries with these ids, in the order given, without repeats; unknown ids skipped.

        Retired entries (kept for older versions) are returned too: callers check the window.
        """
        wanted = list(dict.fromkeys(ids))
        found: dict[str, FaqEntry] = {}
        with self._sessions.begin() as session:
            for batch in _batches(wanted):
                query = select(FaqEntryRow).where(FaqEntryRow.id.in_(batch))
                found.update((row.id, faq_from_row(row)) for row in session.scalars(query))
        return [found[faq_id] for faq_id in wanted if faq_id in found]

    def live_faq_keys(self, kb_id: str, keys: Sequence[str]) -> dict[str, str]:
        """Content key -> id of the live entries of `kb_id` among `keys`."""
        with self._sessions.begin() as session:
            return _live_keys(session, kb_id, keys)

    def list_faq_entries(self, kb_id: str, live_only: bool = False) -> list[FaqEntry]:
        """The FAQ entries of `kb_id` in the order they were added: every stored row (of any
        retained version), or with `live_only` those in the draft (not retired)."""
        query = select(FaqEntryRow).where(FaqEntryRow.kb_id == kb_id)
        if live_only:
            query = query.where(FaqEntryRow.valid_to_seq == 0)
        query = query.order_by(FaqEntryRow.created_at, FaqEntryRow.id)
        with self._sessions.begin() as session:
            return [faq_from_row(row) for row in session.scalars(query)]

    def count_faq_entries(self, kb_id: str, version_seq: int | None = None) -> int:
        """How many FAQ entries `kb_id` holds: live in the draft, or valid in `version_seq`."""
        # every search asks (the FAQ side of its plan): prebuilt, on a Core connection
        query, values = ((_LIVE_FAQ_COUNT, {"kb_id": kb_id}) if version_seq is None else
                         (_FAQ_COUNT_AT, {"kb_id": kb_id, "seq": version_seq}))
        with self._engine.connect() as connection:
            return int(connection.execute(query, values).scalar() or 0)


def _values(entries: Sequence[FaqEntry]) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    return [
        {
            "id": entry.id,
            "kb_id": entry.kb_id,
            "question": entry.question,
            "answer": entry.answer,
            "source": entry.source,
            "sha256": entry.sha256,
            "tenant_id": entry.tenant_id,
            "dataset_id": entry.dataset_id,
            "visibility": entry.visibility,
            "allowed_roles": list(entry.allowed_roles) or None,
            "valid_from_seq": entry.valid_from_seq,
            "valid_to_seq": entry.valid_to_seq,
            # SQLite drops the offset when storing, so only UTC goes in.
            "created_at": (
                to_utc(entry.created_at) if entry.created_at
                else now + timedelta(microseconds=position)
            ),
        }
        for position, entry in enumerate(entries)
    ]
