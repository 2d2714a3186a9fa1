"""BM25 over pre-tokenized text, one on-disk tantivy index per knowledge base.

Layout under the store directory: `.lock` (held while the store is open) and one tantivy
index per kb in a directory named by the sha1 hex of its kb_id. Each kb has its own BM25
statistics (document frequencies, average length), so adding, changing or deleting chunks
of one kb never moves the scores or the ranking of another. A kb's index can be rebuilt
beside the live one and switched in atomically while searches run (bm25_rebuild.py).
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tantivy import Occur, Query

from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION, analyzer_for
from ragsift.adapters.embedded_index.bm25_kb import (
    KB_DIRECTORY,
    IndexInUse,
    KbIndex,
    kb_directory_name,
    lock_root,
    roles_clause,
    schema,
    unlock_root,
    version_clause,
)
from ragsift.adapters.embedded_index.bm25_rebuild import (
    UPGRADE_MARKER,
    JournaledDelete,
    JournaledUpsert,
    KbRebuild,
    RebuildInProgress,
    mark_upgrade,
    move_single_index_aside,
    recover,
    staged_directory,
    switch_in,
)
from ragsift.domain.errors import RagsiftError
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

__all__ = ["IndexInUse", "SparseLayoutOutdated", "TantivyBm25Store"]

logger = logging.getLogger(__name__)


class SparseLayoutOutdated(RagsiftError):
    """The directory holds the old single-index BM25 layout, which cannot be converted."""

    code = "sparse_layout_outdated"


class TantivyBm25Store:
    """Per-kb BM25 search with document and scope filters that never change the scores.

    Kb indexes are created on the first upsert into the kb and opened on first use; each
    opens its writer on its first write and keeps it until `close`. Writes are serialised
    by one lock; searches take no lock (only the first open of a kb index does).

    `upgrade_layout` (for `ragsift rebuild-sparse` only) moves an outdated layout aside
    instead of refusing it; every kb must then be rebuilt and `finish_upgrade` called.
    """

    def __init__(self, directory: Path, upgrade_layout: bool = False) -> None:
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        # Taken first, so a second process fails here before it reads or changes anything.
        self._lock_fd: int | None = lock_root(root)
        try:
            _check_layout(root, upgrade_layout)
            recover(root)
        except BaseException:
            unlock_root(self._lock_fd)
            raise
        self._root = root
        self._schema = schema()
        self._write_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._kbs: dict[str, KbIndex] = {}
        self._rebuilds: dict[str, KbRebuild] = {}  # by kb directory name
        # Kb indexes on disk (by directory name); only this process adds to it while locked.
        self._names = {
            entry.name
            for entry in root.iterdir()
            if KB_DIRECTORY.fullmatch(entry.name) and (entry / "meta.json").is_file()
        }
        # Upgrade mode: kb indexes of an older schema, never opened, waiting to be rebuilt.
        self._outdated: set[str] = set()
        if upgrade_layout:
            self._set_outdated_aside()
        logger.debug("opened BM25 store %s with %d kb indexes", root, len(self._names))

    def count(self) -> int:
        """Number of live documents (one per chunk) over every kb, as last committed."""
        total = 0
        for name in self._kb_names():
            kb = self._kb(name, create=False)
            if kb is not None:
                total += int(kb.searcher.num_docs)
        return total

    def analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]:
        """(version, analyzer) that upserts into this kb use; a new kb gets the current one.

        The analyzer is a module-level function, so it pickles into worker processes.
        """
        kb = self._kb(kb_directory_name(kb_id), create=False)
        version = CURRENT_VERSION if kb is None else kb.analyzer_version
        return version, analyzer_for(version)

    # ---- writes -------------------------------------------------------------------------

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        """Insert or replace chunks by chunk_id; the last occurrence wins inside one batch."""
        if not records:
            return
        latest = {record.chunk_id: record for record in records}
        target = {chunk_id: kb_directory_name(r.kb_id) for chunk_id, r in latest.items()}
        groups: dict[str, list[IndexRecord]] = {}
        for chunk_id, record in latest.items():
            groups.setdefault(target[chunk_id], []).append(record)
        self._check_open()
        kbs = {name: self._kb(name, create=True) for name in groups}
        # Analysis is the costly part and needs no lock; each kb index analyzes with the
        # analyzer version it was built with.
        documents = {
            name: [kb.document(r) for r in groups[name]]
            for name, kb in kbs.items() if kb is not None
        }
        with self._write_lock:
            self._check_open()
            for name, group in groups.items():
                kb = kbs[name]
                assert kb is not None
                writer = kb.writer()
                # Deletes only hit documents added before them, so the adds below survive.
                for record in group:
                    writer.delete_documents_by_term("chunk_id", record.chunk_id)
                for doc in documents[name]:
                    writer.add_document(doc)
                kb.commit()
                self._journal(name, JournaledUpsert(tuple(group)))
            # A chunk that moved to another kb leaves its old one. After the add: a crash in
            # between leaves a copy in the old kb (which the kb re-check of hits drops and
            # the next upsert removes), never a lost chunk.
            for name in self._kb_names():
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
                for name in self._kb_names():
                    self._delete_terms(name, "chunk_id", ids)
                    self._journal(name, JournaledDelete("chunk_id", tuple(ids)))

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document."""
        with self._write_lock:
            self._check_open()
            for name in self._kb_names():
                self._delete_terms(name, "document_id", [document_id])
                self._journal(name, JournaledDelete("document_id", (document_id,)))

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
                shutil.rmtree(self._root / name, ignore_errors=True)
            self._outdated.clear()
            (self._root / UPGRADE_MARKER).unlink(missing_ok=True)

    @contextmanager
    def rebuild(self, kb_id: str) -> Iterator[KbRebuild]:
        """Build a new index of one kb from what the block adds, then switch to it.

        Writes to the kb meanwhile reach the live index and are replayed onto the new one
        under the write lock, just before the switch; searches use the live index until
        the switch and those in flight then finish on it. An exception discards the build.
        """
        name = kb_directory_name(kb_id)
        with self._write_lock:
            self._check_open()
            if name in self._rebuilds:
                raise RebuildInProgress(f"the BM25 index of kb {kb_id!r} is being rebuilt already")
            # The live directory must exist before a build starts (crash recovery relies on it).
            if name not in self._outdated:
                self._kb(name, create=True)
            staged = staged_directory(self._root, name)
            shutil.rmtree(staged, ignore_errors=True)
            rebuild = KbRebuild(kb_id, KbIndex(staged, self._schema), staged)
            self._rebuilds[name] = rebuild
        try:
            yield rebuild
            with self._write_lock:
                self._check_open()
                rebuild.finish()
                if name in self._kbs:  # not when the live one has an outdated schema
                    self._kbs[name].close_writer()
                switch_in(self._root, name)
                # One assignment publishes the new index; searches holding the old one's
                # searcher finish on it (its files stay readable after deletion).
                self._kbs[name] = KbIndex(self._root / name, self._schema)
                with self._open_lock:
                    self._names.add(name)
                    self._outdated.discard(name)
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

    def search(self, query: str, search_filter: SearchFilter, limit: int) -> list[ChannelHit]:
        """Top-`limit` chunks of the filter's kb by raw BM25 among those the filter allows."""
        if limit <= 0:
            return []
        restrictions = self._filter_clauses(search_filter)
        if restrictions is None:
            return []
        kb = self._kb(kb_directory_name(search_filter.kb_id), create=False)
        if kb is None:
            return []
        # Repeated query tokens are deduplicated: search-mode segmentation already repeats
        # the pieces of compound words, and counting them again would over-weight them.
        tokens = list(dict.fromkeys(kb.analyze(query)))
        if not tokens:
            return []
        text_query = Query.boolean_query(
            [(Occur.Should, Query.term_query(self._schema, "text", token)) for token in tokens]
        )
        combined = text_query
        if restrictions:
            # The filter is a MUST clause with a constant score of 0, so it restricts the
            # matches without altering the BM25 score; the text disjunction is a MUST too,
            # so a document must contain at least one query token.
            combined = Query.boolean_query(
                [
                    (Occur.Must, text_query),
                    (
                        Occur.Must,
                        Query.const_score_query(
                            Query.boolean_query([(Occur.Must, c) for c in restrictions]), 0.0
                        ),
                    ),
                ]
            )
        searcher = kb.searcher
        hits = searcher.search(combined, limit, count=False).hits
        results: list[ChannelHit] = []
        for score, address in hits:
            doc = searcher.doc(address)
            results.append(
                ChannelHit(
                    chunk_id=str(doc.get_first("chunk_id")),
                    document_id=str(doc.get_first("document_id")),
                    score=float(score),
                )
            )
        # Stable order among equal scores, whatever the segment layout.
        results.sort(key=lambda hit: (-hit.score, hit.chunk_id))
        return results

    # ---- internals ----------------------------------------------------------------------

    def _filter_clauses(self, search_filter: SearchFilter) -> list[Query] | None:
        """Document and scope restrictions as term-set queries (never parsed text).

        The kb needs no clause, as its index holds nothing else; None when the filter
        allows nothing, [] when it restricts nothing.
        """
        restrictions: dict[str, frozenset[str]] = dict(search_filter.scope_fields())
        if search_filter.document_ids is not None:
            restrictions["document_id"] = search_filter.document_ids
        clauses: list[Query] = []
        for name, values in restrictions.items():
            if not values:
                return None
            clauses.append(Query.term_set_query(self._schema, name, sorted(values)))
        if search_filter.roles is not None:
            clauses.append(roles_clause(self._schema, search_filter.roles))
        if search_filter.version_seq is not None:
            clauses.append(version_clause(self._schema, search_filter.version_seq))
        return clauses

    def _kb(self, name: str, *, create: bool) -> KbIndex | None:
        """The open index of one kb directory; None when it does not exist and not `create`."""
        kb = self._kbs.get(name)
        if kb is not None:
            return kb
        with self._open_lock:
            kb = self._kbs.get(name)
            if kb is None and (create or name in self._names):
                kb = KbIndex(self._root / name, self._schema)
                self._kbs[name] = kb
                self._names.add(name)
            return kb

    def _kb_names(self) -> list[str]:
        """The kb directories on disk, sorted (a copy: writes may add one meanwhile)."""
        with self._open_lock:
            return sorted(self._names)

    def _delete_terms(self, name: str, field: str, values: Sequence[str]) -> None:
        """Delete by term in one kb, touching its writer only when it holds a match."""
        kb = self._kb(name, create=False)
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


def _check_layout(root: Path, upgrade: bool) -> None:
    """Refuse the old layout (one tantivy index for all kbs at the root) unless upgrading.

    It cannot be converted in place because the analyzed text is not stored; the chunks
    must be indexed again from the relational store, which is the source of truth.
    """
    outdated = (root / "meta.json").exists()
    if upgrade and (outdated or (root / UPGRADE_MARKER).exists()):
        move_single_index_aside(root)
    elif outdated:
        raise SparseLayoutOutdated(
            f"{root} holds a BM25 index in the old single-index layout (one index shared by "
            "every knowledge base), which this version cannot read or convert because the "
            "indexed text is not stored. Rebuild it from the database with `ragsift "
            "rebuild-sparse` (every knowledge base; nothing is re-embedded)."
        )
    elif (root / UPGRADE_MARKER).exists():
        raise SparseLayoutOutdated(
            f"{root}: an upgrade of the BM25 layout has not finished; run `ragsift "
            "rebuild-sparse` again to rebuild every knowledge base."
        )
