"""The FAQ part of the Repository port: bulk import with dedupe, reads in the order asked."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import (
    FaqEntryRow,
    KnowledgeBaseRow,
    faq_from_row,
    storable,
    to_utc,
)
from ragsift.domain.errors import NotFound
from ragsift.domain.faq import FaqEntry

logger = logging.getLogger(__name__)

_IN_BATCH = 500  # bound variables per IN list, as in repository.py
_FAQ_TABLE = FaqEntryRow.metadata.tables[FaqEntryRow.__tablename__]


def _batches(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_BATCH):
        yield items[start : start + _IN_BATCH]


class FaqRepositoryMixin:
    """FAQ entries in the relational store; mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def add_faq_entries(self, entries: Sequence[FaqEntry]) -> int:
        """Store the entries that are new; a pair (by content hash) a KB already holds is skipped.

        Returns how many were added. Entries without `created_at` get the insertion time, one
        microsecond apart, so listing keeps the order they came in.
        """
        unique: dict[tuple[str, str], FaqEntry] = {}
        for entry in entries:
            unique.setdefault((entry.kb_id, entry.sha256), entry)
        if not unique:
            return 0
        try:
            with storable("FAQ entries"):
                return self._insert_new(list(unique.values()))
        except IntegrityError as exc:
            missing = sorted({kb for kb, _ in unique if not self._kb_exists(kb)})
            if missing:
                raise NotFound(f"knowledge base {missing[0]!r} does not exist") from exc
            # A concurrent import stored some of the same pairs in between: look again.
            logger.info("FAQ insert raced with another writer; retrying once")
            with storable("FAQ entries"):
                return self._insert_new(list(unique.values()))

    def _insert_new(self, entries: list[FaqEntry]) -> int:
        with self._sessions.begin() as session:
            taken_ids, taken_hashes = self._taken(session, entries)
            fresh = [
                e for e in entries
                if e.id not in taken_ids and (e.kb_id, e.sha256) not in taken_hashes
            ]
            if fresh:
                session.execute(insert(_FAQ_TABLE), _values(fresh))
        logger.debug("stored %d of %d FAQ entries", len(fresh), len(entries))
        return len(fresh)

    @staticmethod
    def _taken(
        session: Session, entries: Sequence[FaqEntry]
    ) -> tuple[set[str], set[tuple[str, str]]]:
        """Ids and (kb, hash) pairs among `entries` that are already stored."""
        ids: set[str] = set()
        for batch in _batches([e.id for e in entries]):
            ids.update(session.scalars(select(FaqEntryRow.id).where(FaqEntryRow.id.in_(batch))))
        hashes: set[tuple[str, str]] = set()
        by_kb: dict[str, list[str]] = {}
        for entry in entries:
            by_kb.setdefault(entry.kb_id, []).append(entry.sha256)
        for kb_id, shas in by_kb.items():
            for batch in _batches(shas):
                query = select(FaqEntryRow.sha256).where(
                    FaqEntryRow.kb_id == kb_id, FaqEntryRow.sha256.in_(batch)
                )
                hashes.update((kb_id, sha) for sha in session.scalars(query))
        return ids, hashes

    def _kb_exists(self, kb_id: str) -> bool:
        with self._sessions.begin() as session:
            return session.get(KnowledgeBaseRow, kb_id) is not None

    def get_faq_entries(self, ids: Sequence[str]) -> list[FaqEntry]:
        """The entries with these ids, in the order given, without repeats; unknown ids skipped."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, FaqEntry] = {}
        with self._sessions.begin() as session:
            for batch in _batches(wanted):
                query = select(FaqEntryRow).where(FaqEntryRow.id.in_(batch))
                found.update((row.id, faq_from_row(row)) for row in session.scalars(query))
        return [found[faq_id] for faq_id in wanted if faq_id in found]

    def list_faq_entries(self, kb_id: str) -> list[FaqEntry]:
        """Every FAQ entry of `kb_id`, in the order they were added."""
        query = (
            select(FaqEntryRow)
            .where(FaqEntryRow.kb_id == kb_id)
            .order_by(FaqEntryRow.created_at, FaqEntryRow.id)
        )
        with self._sessions.begin() as session:
            return [faq_from_row(row) for row in session.scalars(query)]

    def count_faq_entries(self, kb_id: str) -> int:
        """How many FAQ entries `kb_id` holds (one indexed count)."""
        query = select(func.count()).select_from(FaqEntryRow).where(FaqEntryRow.kb_id == kb_id)
        with self._sessions.begin() as session:
            return int(session.scalar(query) or 0)

    def delete_faq_entries(self, kb_id: str) -> int:
        """Remove every FAQ entry of `kb_id`; returns how many were removed."""
        with self._sessions.begin() as session:
            result = session.execute(delete(FaqEntryRow).where(FaqEntryRow.kb_id == kb_id))
            return int(result.rowcount)  # type: ignore[attr-defined]


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
            # SQLite drops the offset when storing, so only UTC goes in.
            "created_at": (
                to_utc(entry.created_at) if entry.created_at
                else now + timedelta(microseconds=position)
            ),
        }
        for position, entry in enumerate(entries)
    ]
