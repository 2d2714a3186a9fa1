"""The user's document metadata: changed in place (no chunk, vector or index changes: filters
read it from here), and read per KB for a filter and per hit for the results."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.change_probe import SqliteChangeProbe, probe_for
from ragsift.adapters.sql.orm import DocumentRow
from ragsift.adapters.sql.version_commits import lock_state
from ragsift.domain.errors import NotFound
from ragsift.domain.metadata import ROLES_FIELD, MetadataUpdate, same_metadata

# ids per IN list: well under SQLite's oldest bound-variable limit
_IN_BATCH = 500
# KBs whose filter stamp is kept beside the probe's value
_CACHED_STAMPS = 256


class MetadataRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]
    # set by SqlRepository.__init__: see filter_stamp
    _engine: Engine
    _probe: SqliteChangeProbe | bool | None  # False until opened
    _filter_stamps: dict[str, tuple[int, tuple[int, str | None]]]

    def set_metadata(self, document_id: str, metadata: Mapping[str, Any]) -> None:
        """Replace a document's metadata (already validated, in its JSON form)."""
        self.update_metadata(document_id, lambda _current: dict(metadata))

    def update_metadata(self, document_id: str,
                        change: Callable[[dict[str, Any]], dict[str, Any]]) -> MetadataUpdate:
        """Read a document's metadata, write `change(current)` and return it with whether it
        changed, atomically: two concurrent changes (a PATCH of key a, one of key b) both
        land instead of the later write dropping the earlier one's key. `change` may raise
        (nothing is written). A real change counts as a change of the KB's draft
        (VersionState.draft_changes)."""
        with self._sessions.begin() as session:
            where = DocumentRow.id == document_id
            kb_id = session.scalar(select(DocumentRow.kb_id).where(where))
            if kb_id is None:
                raise NotFound(f"document {document_id!r} does not exist")
            # the KB's version state first, as every versioned write takes it: its UPDATE is
            # the write lock on SQLite, taken before the read below (pysqlite would read
            # outside any transaction, and a deferred one could not wait for the lock)
            lock_state(session, kb_id)
            if session.get_bind().dialect.name == "sqlite":  # a KB without versions yet
                session.execute(update(DocumentRow).where(where).values(id=DocumentRow.id))
            current = session.execute(  # PostgreSQL: the row locked until the commit
                select(DocumentRow.meta).where(where).with_for_update()).first()
            if current is None:
                raise NotFound(f"document {document_id!r} does not exist")
            before = dict(current[0] or {})
            metadata = change(dict(before))
            changed = not same_metadata(metadata, before)
            if changed:
                session.execute(update(DocumentRow).where(where)
                                .values(meta=dict(metadata), updated_at=datetime.now(UTC)))
                # a change of the document in the KB's draft: the next sealed version has it
                lock_state(session, kb_id, changes=1)
        return MetadataUpdate(metadata, changed)

    def filter_fields(self, kb_id: str) -> dict[str, dict[str, Any]]:
        """document id -> its metadata (JSON form), scope fields and allowed roles (as
        ROLES_FIELD), for every document of `kb_id`: what a metadata filter is evaluated on
        (status is checked by the search)."""
        query = select(DocumentRow.id, DocumentRow.meta, DocumentRow.source,
                       DocumentRow.tenant_id, DocumentRow.dataset_id, DocumentRow.visibility,
                       DocumentRow.allowed_roles).where(DocumentRow.kb_id == kb_id)
        fields: dict[str, dict[str, Any]] = {}
        with self._sessions.begin() as session:
            for doc_id, meta, source, tenant, dataset, visibility, roles in session.execute(
                    query):
                scope = {"source": source, "tenant_id": tenant, "dataset_id": dataset,
                         "visibility": visibility, "document_id": doc_id,
                         ROLES_FIELD: list(roles) if roles else None}
                fields[doc_id] = {**(meta or {}),
                                  **{k: v for k, v in scope.items() if v is not None}}
        return fields

    def filter_stamp(self, kb_id: str) -> tuple[int, str | None]:
        """(documents, latest change) of `kb_id`: changes whenever a document is added,
        deleted or changed (its metadata included), so filter_fields can be cached on it.
        On a SQLite file, read again only after a commit (change_probe.py)."""
        probe = self._change_probe()
        # read before the stamp: a commit in between makes the next call read it again
        version = None if probe is None else probe.version()
        stamps = self._filter_stamps
        cached = stamps.get(kb_id)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        # count(*), not count(id): with ix_documents_kb_id_updated_at (0018) SQLite answers
        # from the index alone; count(id) would read every row for its id (never NULL)
        query = select(func.count(), func.max(DocumentRow.updated_at)
                       ).select_from(DocumentRow).where(DocumentRow.kb_id == kb_id)
        with self._sessions.begin() as session:
            count, latest = session.execute(query).one()
        stamp = int(count), None if latest is None else str(latest)
        if version is not None:
            if len(stamps) >= _CACHED_STAMPS:
                stamps.clear()
            stamps[kb_id] = (version, stamp)
        return stamp

    def _change_probe(self) -> SqliteChangeProbe | None:
        """This repository's probe, opened on first use (None: not a SQLite file)."""
        if self._probe is False:
            self._probe = probe_for(self._engine)
        return None if isinstance(self._probe, bool) else self._probe

    def close_change_probe(self) -> None:
        """Close the probe's connection (SqlRepository.close)."""
        if isinstance(self._probe, SqliteChangeProbe):
            self._probe.close()
        self._probe = False

    def document_metadata(self, document_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """document id -> its metadata (JSON form), for those of `document_ids` that exist."""
        wanted = list(dict.fromkeys(document_ids))
        found: dict[str, dict[str, Any]] = {}
        with self._sessions.begin() as session:
            for start in range(0, len(wanted), _IN_BATCH):
                part = wanted[start:start + _IN_BATCH]
                query = select(DocumentRow.id, DocumentRow.meta).where(DocumentRow.id.in_(part))
                found.update((doc_id, dict(meta or {})) for doc_id, meta in session.execute(query))
        return found
