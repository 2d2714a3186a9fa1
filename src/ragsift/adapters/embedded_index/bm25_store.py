"""BM25 over pre-tokenized text, one on-disk tantivy index per knowledge base.

Layout under the store directory: `.lock` (held while the store is open) and one tantivy
index per kb in a directory named by the sha1 hex of its kb_id. Each kb has its own BM25
statistics (document frequencies, average length), so adding, changing or deleting chunks
of one kb never moves the scores or the ranking of another. A kb's index can be rebuilt
beside the live one and switched in atomically while searches run (bm25_rebuild.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ragsift.adapters.embedded_index import bm25_metadata_check as metadata_check
from ragsift.adapters.embedded_index.bm25_catalog import Bm25Catalog
from ragsift.adapters.embedded_index.bm25_filters import FilterClauses
from ragsift.adapters.embedded_index.bm25_kb import (
    KbIndex,
    SparseQuery,
    kb_analyzer,
    live_documents,
    unreadable,
)
from ragsift.adapters.embedded_index.bm25_layout import (
    IndexInUse,
    SparseIndexBroken,
    SparseLayoutOutdated,
    kb_directory_name,
)
from ragsift.adapters.embedded_index.bm25_lock import lock_root, unlock_root
from ragsift.adapters.embedded_index.bm25_page import Page, Sift
from ragsift.adapters.embedded_index.bm25_rebuild import (
    UPGRADE_MARKER,
    JournaledDelete,
    JournaledUpsert,
    KbRebuild,
    RebuildInProgress,
    check_layout,
    mark_upgrade,
    recover,
    remove_tree,
    staged_directory,
    switch_in,
)
from ragsift.adapters.embedded_index.bm25_schema import Restrictions, schema
from ragsift.domain.errors import RagsiftError
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

__all__ = ["IndexInUse", "SparseIndexBroken", "SparseLayoutOutdated", "TantivyBm25Store"]

logger = logging.getLogger(__name__)


class TantivyBm25Store(Bm25Catalog):
    """Per-kb BM25 search with document and scope filters that never change the scores.

    Kb indexes are created on the first upsert into the kb and opened on first use; each
    opens its writer on its first write and keeps it until `close`. Writes are serialised
    by one lock; searches take no lock (only the first open of a kb index does).

    A kb index that cannot be opened (files emptied, truncated or missing) is marked broken
    with its error: its searches and writes raise SparseIndexBroken, deletes skip it, every
    other kb works, and `rebuild` replaces it without reading it.

    `upgrade_layout` (for `ragsift rebuild-sparse` only) moves an outdated layout aside
    instead of refusing it; every kb must then be rebuilt and `finish_upgrade` called.
    """

    def __init__(self, directory: Path, upgrade_layout: bool = False) -> None:
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        # Taken first, so a second process fails here before it reads or changes anything.
        self._lock_fd: int | None = lock_root(root)
        try:
            check_layout(root, upgrade_layout)
            recover(root)
        except BaseException:
            unlock_root(self._lock_fd)
            raise
        super().__init__(root, schema())
        self._clauses = FilterClauses()
        self._write_lock = threading.Lock()
        self._rebuilds: dict[str, KbRebuild] = {}  # by kb directory name
        # Upgrade mode: kb indexes of an older schema, never opened, waiting to be rebuilt.
        self._outdated: set[str] = set()
        if upgrade_layout:
            self._set_outdated_aside()
        logger.debug("opened BM25 store %s with %d kb indexes", root, len(self._names))

    def count(self) -> int:
        """Number of live documents (one per chunk) over every kb that opens, as committed."""
        return live_documents(self._kb_names(), self._opened)

    def broken(self, kb_ids: Iterable[str]) -> dict[str, str]:
        """kb_id -> why its index cannot be opened, for each of `kb_ids` whose cannot."""
        return unreadable(kb_ids, self._opened, self._broken)

    def analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]:
        """(version, analyzer) that upserts into this kb use (bm25_kb.kb_analyzer)."""
        return kb_analyzer(kb_id, self._opened)

    # ---- writes -------------------------------------------------------------------------

    def check_writable(self, kb_ids: Iterable[str]) -> None:
        """SparseIndexBroken when an upsert into one of these kbs would fail for its index.

        For callers that write elsewhere first (the dense store), so they fail before it.
        """
        for kb_id in set(kb_ids):
            self._writable(kb_directory_name(kb_id), kb_id)

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        """Insert or replace chunks by chunk_id; the last occurrence wins inside one batch.

        SparseIndexBroken, before anything is written, when a kb of the batch is broken.
        """
        if not records:
            return
        latest = {record.chunk_id: record for record in records}
        target = {chunk_id: kb_directory_name(r.kb_id) for chunk_id, r in latest.items()}
        groups: dict[str, list[IndexRecord]] = {}
        for chunk_id, record in latest.items():
            groups.setdefault(target[chunk_id], []).append(record)
        self._check_open()
        kbs = {name: self._writable(name, group[0].kb_id) for name, group in groups.items()}
        # Analysis is the costly part and needs no lock; each kb index analyzes with the
        # analyzer version it was built with.
        documents = {
            name: [kb.document(r) for r in groups[name]]
            for name, kb in kbs.items() if kb is not None
        }
        with self._write_lock:
            self._check_open()
            # Again under the lock: a rebuild may have switched a kb's index in meanwhile.
            current = {name: self._writable(name, group[0].kb_id)
                       for name, group in groups.items()}
            for name, group in groups.items():
                kb = current[name]
                if kb is not None:  # None: broken and being rebuilt, so the journal only
                    if kb is not kbs[name]:
                        documents[name] = [kb.document(r) for r in group]
                    kb.replace(group, documents[name])
                self._journal(name, JournaledUpsert(tuple(group)))
            # A chunk that moved to another kb leaves its old one. After the add: a crash in
            # between leaves a copy in the old kb (which the kb re-check of hits drops and
            # the next upsert removes), never a lost chunk.
            for name in self._write_targets():
                moved = [chunk_id for chunk_id, kb_name in target.items() if kb_name != name]
                if moved:
                    self._delete_terms(name, "chunk_id", moved)
                    self._journal(name, JournaledDelete("chunk_id", tuple(moved)))

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Remove these chunks from whichever kbs hold them; unknown ids are ignored."""
        ids = sorted(set(chunk_ids))
        with self._write_lock:
            self._check_open()
            if ids:
                for name in self._write_targets():
                    self._delete_terms(name, "chunk_id", ids)
                    self._journal(name, JournaledDelete("chunk_id", tuple(ids)))

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document."""
        with self._write_lock:
            self._check_open()
            for name in self._write_targets():
                self._delete_terms(name, "document_id", [document_id])
                self._journal(name, JournaledDelete("document_id", (document_id,)))

    def document_chunk_ids(self, kb_id: str, document_id: str) -> set[str]:
        """The chunk ids committed for one document, in its kb's index and any other.

        A kb index that cannot be opened holds nothing this can see (its rebuild from the
        facts leaves no stray rows anyway).
        """
        found: set[str] = set()
        for name in dict.fromkeys([kb_directory_name(kb_id), *self._kb_names()]):
            try:
                kb = self._kb(name, create=False)
            except RagsiftError:
                continue
            if kb is not None:
                found |= kb.chunk_ids_of(document_id)
        return found

    @property
    def upgrade_pending(self) -> bool:
        """Whether a layout upgrade still waits for every kb to be rebuilt."""
        return (self._root / UPGRADE_MARKER).exists()

    def finish_upgrade(self) -> None:
        """Declare every kb rebuilt after a layout upgrade; the store opens normally again.

        Kb indexes of an older schema that were not rebuilt belong to no knowledge base of
        the facts any more: they are deleted.
        """
        with self._write_lock:
            for name in sorted(self._outdated):
                logger.warning("deleting the outdated BM25 index %s of no knowledge base", name)
                remove_tree(self._root / name)
            self._outdated.clear()
            (self._root / UPGRADE_MARKER).unlink(missing_ok=True)

    @contextmanager
    def rebuild(self, kb_id: str) -> Iterator[KbRebuild]:
        """Build a new index of one kb from what the block adds, then switch to it.

        Writes to the kb meanwhile reach the live index and are replayed onto the new one
        under the write lock, just before the switch; searches use the live index until
        the switch and those in flight then finish on it. An exception discards the build.
        A broken or outdated live index is never read, only replaced.
        """
        name = kb_directory_name(kb_id)
        with self._write_lock:
            self._check_open()
            if name in self._rebuilds:
                raise RebuildInProgress(f"the BM25 index of kb {kb_id!r} is being rebuilt already")
            # The live directory must exist before a build starts (crash recovery relies on
            # it); a broken one exists already.
            if name not in self._outdated:
                try:
                    self._kb(name, create=True, kb_id=kb_id)
                except SparseIndexBroken:
                    logger.warning("rebuilding the unreadable BM25 index of kb %s: %s",
                                   kb_id, self._broken[name])
            staged = staged_directory(self._root, name)
            remove_tree(staged)
            rebuild = KbRebuild(kb_id, KbIndex(staged, self._schema), staged)
            self._rebuilds[name] = rebuild
        try:
            yield rebuild
            with self._write_lock:
                self._check_open()
                rebuild.finish()
                if name in self._kbs:  # not when the live one is outdated or broken
                    self._kbs[name].close_writer()
                switch_in(self._root, name)
                # One assignment publishes the new index; searches holding the old one's
                # searcher finish on it (its files stay readable after deletion).
                self._kbs[name] = KbIndex(self._root / name, self._schema)
                with self._open_lock:
                    self._names.add(name)
                    self._outdated.discard(name)
                    self._broken.pop(name, None)
                del self._rebuilds[name]
        except BaseException:
            with self._write_lock:
                del self._rebuilds[name]
                rebuild.discard()
            raise

    def close(self) -> None:
        """Finish merges, release the writers and the lock; searches keep working."""
        with self._write_lock:
            if self._lock_fd is None:
                return
            try:
                for kb in list(self._kbs.values()):
                    kb.close_writer()
            finally:
                unlock_root(self._lock_fd)
                self._lock_fd = None

    # ---- search -------------------------------------------------------------------------

    def search(self, query: str, search_filter: SearchFilter, limit: int,
               excluded: frozenset[str] | None = None) -> list[ChannelHit]:
        """Top-`limit` chunks of the filter's kb by raw BM25 among those the filter allows.

        SparseIndexBroken when the kb's index cannot be opened.
        """
        found = self._searchable(search_filter, limit, excluded)
        return [] if found is None else found[0].search(query, found[1], limit)

    def page(self, query: SparseQuery, search_filter: SearchFilter, fetch: int,
             sift: Sift) -> Page:
        """The unrestricted top-`fetch` page of the filter's kb (its scope and version
        clauses kept, no document whitelist) for `query`, sifted by `sift` (bm25_page)."""
        found = self._searchable(search_filter, fetch, frozenset())
        if found is None:
            return Page((), None, 0, None)
        return found[0].page(query, found[1], fetch, sift)

    def stale_metadata(self, kb_id: str, fingerprints: Mapping[str, int]) -> set[str]:
        """The documents of `fingerprints` whose chunks in the kb's index carry other
        metadata (KbIndex.stale_metadata); none when the kb has no index."""
        kb = self._kb(kb_directory_name(kb_id), create=False, kb_id=kb_id)
        return set() if kb is None else kb.stale_metadata(fingerprints)

    def metadata_checked(self, kb_id: str) -> str | None:
        """The facts' stamp the kb's index last agreed with, unwritten since
        (bm25_metadata_check)."""
        kb = self._kb(kb_directory_name(kb_id), create=False, kb_id=kb_id)
        return None if kb is None else metadata_check.checked(kb.directory)

    def record_metadata_checked(self, kb_id: str, facts: str) -> None:
        """Note that the kb's index, as committed now, agrees with the facts at `facts`."""
        kb = self._kb(kb_directory_name(kb_id), create=False, kb_id=kb_id)
        if kb is not None:
            metadata_check.record(kb.directory, facts)

    def takes_terms(self, search_filter: SearchFilter) -> bool:
        """Whether the filter's metadata part reaches the kb's index as terms."""
        kb_id = search_filter.kb_id
        return self._clauses.takes_terms(search_filter, lambda: self._kb(
            kb_directory_name(kb_id), create=False, kb_id=kb_id))

    def search_weighted(
        self, terms: Sequence[tuple[str, float]], search_filter: SearchFilter, limit: int,
        excluded: frozenset[str] | None = None,
    ) -> list[ChannelHit]:
        """`search` for (index term, weight) pairs, e.g. a feedback-expanded query.

        Terms are the kb analyzer's tokens (see `analyzer`) and become term queries boosted
        by their weight; nothing is parsed, so no text can act as query syntax.
        """
        found = self._searchable(search_filter, limit, excluded)
        return [] if found is None else found[0].search_weighted(terms, found[1], limit)

    def term_stats(self, kb_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(documents, document frequency per term) of one kb's index, for idf weights."""
        kb = self._kb(kb_directory_name(kb_id), create=False, kb_id=kb_id)
        if kb is None:
            return 0, dict.fromkeys(terms, 0)
        return kb.term_stats(terms)

    # ---- internals ----------------------------------------------------------------------

    def _searchable(
        self, search_filter: SearchFilter, limit: int, excluded: frozenset[str] | None = None,
    ) -> tuple[KbIndex, Restrictions] | None:
        """The filter's kb index and its restrictions; None when nothing can match."""
        if limit <= 0:
            return None
        kb_id = search_filter.kb_id
        return self._clauses.for_kb(search_filter, excluded, lambda: self._kb(
            kb_directory_name(kb_id), create=False, kb_id=kb_id))

    def _writable(self, name: str, kb_id: str) -> KbIndex | None:
        """The kb's index for an upsert (created if new); None when it is broken and being
        rebuilt (the write then goes to the rebuild's journal only); else SparseIndexBroken."""
        try:
            kb = self._kb(name, create=True, kb_id=kb_id)
        except SparseIndexBroken:
            if name in self._rebuilds:
                return None
            raise
        assert kb is not None
        return kb

    def _write_targets(self) -> list[str]:
        """Every kb a delete must reach (write lock held): those on disk and those being
        rebuilt, a damaged one included (its rebuild's journal needs the delete)."""
        return sorted(set(self._kb_names()) | set(self._rebuilds))

    def _delete_terms(self, name: str, field: str, values: Sequence[str]) -> None:
        """Delete by term in one kb, touching its writer only when it holds a match.

        A broken kb is skipped: its rebuild reads the facts, which no longer hold them.
        """
        try:
            kb = self._kb(name, create=False)
        except SparseIndexBroken:
            return
        if kb is not None and kb.contains_any(field, values):
            kb.delete_terms(field, values)

    def _check_open(self) -> None:
        if self._lock_fd is None:
            raise RuntimeError("the BM25 store is closed")

    def _set_outdated_aside(self) -> None:
        """Upgrade mode: leave kb indexes of an older schema out until they are rebuilt."""
        for name in sorted(self._names):
            try:
                self._kb(name, create=False)
            except SparseLayoutOutdated:
                self._outdated.add(name)
            except SparseIndexBroken:
                pass  # kept broken until its rebuild
        if self._outdated:
            self._names -= self._outdated
            mark_upgrade(self._root)
            logger.warning("%d BM25 kb index(es) in %s have an outdated schema and must be "
                           "rebuilt", len(self._outdated), self._root)

    def _journal(self, name: str, entry: JournaledUpsert | JournaledDelete) -> None:
        """Record a write for the rebuild of kb directory `name`, if one runs (write lock held)."""
        rebuild = self._rebuilds.get(name)
        if rebuild is not None:
            rebuild.journal.append(entry)
