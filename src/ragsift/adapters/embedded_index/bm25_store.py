"""BM25 over pre-tokenized text, one on-disk tantivy index per knowledge base.

Layout under the store directory: `.lock` (held while the store is open) and one tantivy
index per kb in a directory named by the sha1 hex of its kb_id. Each kb has its own BM25
statistics (document frequencies, average length), so adding, changing or deleting chunks
of one kb never moves the scores or the ranking of another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from tantivy import Occur, Query

from ragsift.adapters.embedded_index.analyzer import analyze
from ragsift.adapters.embedded_index.bm25_kb import (
    KB_DIRECTORY,
    IndexInUse,
    KbIndex,
    document,
    kb_directory_name,
    lock_root,
    schema,
    unlock_root,
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
    """

    def __init__(self, directory: Path) -> None:
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        # Taken first, so a second process fails here before it reads or changes anything.
        self._lock_fd: int | None = lock_root(root)
        try:
            _refuse_single_index_layout(root)
        except BaseException:
            unlock_root(self._lock_fd)
            raise
        self._root = root
        self._schema = schema()
        self._write_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._kbs: dict[str, KbIndex] = {}
        # Kb indexes on disk (by directory name); only this process adds to it while locked.
        self._names = {
            entry.name
            for entry in root.iterdir()
            if KB_DIRECTORY.fullmatch(entry.name) and (entry / "meta.json").is_file()
        }
        logger.debug("opened BM25 store %s with %d kb indexes", root, len(self._names))

    def count(self) -> int:
        """Number of live documents (one per chunk) over every kb, as last committed."""
        total = 0
        for name in self._kb_names():
            kb = self._kb(name, create=False)
            if kb is not None:
                total += int(kb.searcher.num_docs)
        return total

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
        # Analysis is the costly part and needs no lock.
        documents = {name: [document(r) for r in group] for name, group in groups.items()}
        with self._write_lock:
            self._check_open()
            for name, group in groups.items():
                kb = self._kb(name, create=True)
                assert kb is not None
                writer = kb.writer()
                # Deletes only hit documents added before them, so the adds below survive.
                for record in group:
                    writer.delete_documents_by_term("chunk_id", record.chunk_id)
                for doc in documents[name]:
                    writer.add_document(doc)
                kb.commit()
            # A chunk that moved to another kb leaves its old one. After the add: a crash in
            # between leaves a copy in the old kb (which the kb re-check of hits drops and
            # the next upsert removes), never a lost chunk.
            for name in self._kb_names():
                moved = [chunk_id for chunk_id, kb_name in target.items() if kb_name != name]
                if moved:
                    self._delete_terms(name, "chunk_id", moved)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Remove these chunks from whichever kbs hold them; unknown ids are ignored."""
        ids = sorted(set(chunk_ids))
        with self._write_lock:
            self._check_open()
            if ids:
                for name in self._kb_names():
                    self._delete_terms(name, "chunk_id", ids)

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document."""
        with self._write_lock:
            self._check_open()
            for name in self._kb_names():
                self._delete_terms(name, "document_id", [document_id])

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
        # Repeated query tokens are deduplicated: search-mode segmentation already repeats
        # the pieces of compound words, and counting them again would over-weight them.
        tokens = list(dict.fromkeys(analyze(query)))
        if not tokens or limit <= 0:
            return []
        restrictions = self._filter_clauses(search_filter)
        if restrictions is None:
            return []
        kb = self._kb(kb_directory_name(search_filter.kb_id), create=False)
        if kb is None:
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


def _refuse_single_index_layout(root: Path) -> None:
    """Fail clearly on the old layout: one tantivy index for all kbs at the root.

    It cannot be converted in place because the analyzed text is not stored; the chunks
    must be indexed again from the relational store, which is the source of truth.
    """
    if (root / "meta.json").exists():
        raise SparseLayoutOutdated(
            f"{root} holds a BM25 index in the old single-index layout (one index shared by "
            "every knowledge base), which this version cannot read or convert because the "
            "indexed text is not stored. Rebuild it from the database: `ragsift "
            "rebuild-sparse` (planned); until then move that directory away and re-index "
            "the documents."
        )
