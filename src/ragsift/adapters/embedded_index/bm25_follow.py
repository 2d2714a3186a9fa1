"""BM25 over another process's store, read-only: the follower side of TantivyBm25Store.

The writer holds the store's lock and commits each kb's tantivy index by writing its
meta.json anew (a rename); a rebuild switches a kb's whole directory in (renames too). So
before each search the follower stats the kb's directory and meta.json: the same pair keeps
its searcher, a new meta.json reloads it, a new directory reopens the kb. It takes no lock,
creates, repairs and recovers nothing, and every write raises IndexReadOnly.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ragsift.adapters.embedded_index import bm25_metadata_check as metadata_check
from ragsift.adapters.embedded_index.bm25_filters import FilterClauses
from ragsift.adapters.embedded_index.bm25_kb import (
    KbIndex,
    SparseQuery,
    kb_analyzer,
    live_documents,
    unreadable,
)
from ragsift.adapters.embedded_index.bm25_layout import (
    KB_DIRECTORY,
    SparseLayoutOutdated,
    broken_error,
    kb_directory_name,
    missing_meta,
)
from ragsift.adapters.embedded_index.bm25_page import Page, Sift
from ragsift.adapters.embedded_index.bm25_rebuild import UPGRADE_MARKER, KbRebuild, check_layout
from ragsift.adapters.embedded_index.bm25_schema import Restrictions, schema
from ragsift.domain.errors import IndexReadOnly
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

logger = logging.getLogger(__name__)

# (directory inode, meta.json inode, meta.json mtime): what a kb's searcher was opened at
Signature = tuple[int, int, int]


class FollowedBm25Store:
    """The read side of a BM25 store another process writes (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self._root = Path(directory)
        # an old layout or an unfinished upgrade is refused as the writer refuses it (reads only)
        check_layout(self._root, upgrade=False)
        self._schema = schema()
        self._clauses = FilterClauses()
        self._lock = threading.Lock()
        self._kbs: dict[str, tuple[Signature, KbIndex]] = {}
        self._why: dict[str, str] = {}  # the last reason a kb index could not be opened
        self.count()  # opens every kb index now: one of an older schema is refused here too

    # ---- reads --------------------------------------------------------------------------

    def count(self) -> int:
        """Live documents over every kb index on disk, as last committed."""
        return live_documents(self._names(), self._kb)

    def broken(self, kb_ids: Iterable[str]) -> dict[str, str]:
        """kb_id -> why its index cannot be opened, for each of `kb_ids` whose cannot."""
        return unreadable(kb_ids, self._kb, self._why)

    def analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]:
        """(version, analyzer) of the kb's index (bm25_kb.kb_analyzer)."""
        return kb_analyzer(kb_id, self._kb)

    def search(self, query: str, search_filter: SearchFilter, limit: int,
               excluded: frozenset[str] | None = None) -> list[ChannelHit]:
        """TantivyBm25Store.search over the kb's newest commit."""
        found = self._searchable(search_filter, limit, excluded)
        return [] if found is None else found[0].search(query, found[1], limit)

    def page(self, query: SparseQuery, search_filter: SearchFilter, fetch: int,
             sift: Sift) -> Page:
        """TantivyBm25Store.page over the kb's newest commit."""
        found = self._searchable(search_filter, fetch, frozenset())
        if found is None:
            return Page((), None, 0, None)
        return found[0].page(query, found[1], fetch, sift)

    def stale_metadata(self, kb_id: str, fingerprints: Mapping[str, int]) -> set[str]:
        """TantivyBm25Store.stale_metadata over the kb's newest commit."""
        kb = self._kb(kb_directory_name(kb_id), kb_id)
        return set() if kb is None else kb.stale_metadata(fingerprints)

    def metadata_checked(self, kb_id: str) -> str | None:
        """TantivyBm25Store.metadata_checked over the kb's newest commit."""
        kb = self._kb(kb_directory_name(kb_id), kb_id)
        return None if kb is None else metadata_check.checked(kb.directory)

    def record_metadata_checked(self, kb_id: str, facts: str) -> None:
        """Nothing: a follower writes nothing in the writer's directories."""

    def takes_terms(self, search_filter: SearchFilter) -> bool:
        """Whether the filter's metadata part reaches the kb's index as terms."""
        kb_id = search_filter.kb_id
        return self._clauses.takes_terms(search_filter, lambda: self._kb(
            kb_directory_name(kb_id), kb_id))

    def search_weighted(
        self, terms: Sequence[tuple[str, float]], search_filter: SearchFilter, limit: int,
        excluded: frozenset[str] | None = None,
    ) -> list[ChannelHit]:
        """TantivyBm25Store.search_weighted over the kb's newest commit."""
        found = self._searchable(search_filter, limit, excluded)
        return [] if found is None else found[0].search_weighted(terms, found[1], limit)

    def term_stats(self, kb_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(documents, document frequency per term) of one kb's index, for idf weights."""
        kb = self._kb(kb_directory_name(kb_id), kb_id)
        if kb is None:
            return 0, dict.fromkeys(terms, 0)
        return kb.term_stats(terms)

    def document_chunk_ids(self, kb_id: str, document_id: str) -> set[str]:
        """The chunk ids committed for one document in its kb's index."""
        kb = self._kb(kb_directory_name(kb_id), kb_id)
        return set() if kb is None else kb.chunk_ids_of(document_id)

    @property
    def upgrade_pending(self) -> bool:
        """Whether the writer's layout upgrade still waits for rebuilds."""
        return (self._root / UPGRADE_MARKER).exists()

    # ---- writes: never here -------------------------------------------------------------

    def check_writable(self, kb_ids: Iterable[str]) -> None:
        raise _read_only(self._root)

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        raise _read_only(self._root)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        raise _read_only(self._root)

    def delete_document(self, document_id: str) -> None:
        raise _read_only(self._root)

    def finish_upgrade(self) -> None:
        raise _read_only(self._root)

    @contextmanager
    def rebuild(self, kb_id: str) -> Iterator[KbRebuild]:
        raise _read_only(self._root)
        yield  # pragma: no cover - a generator, so the signature matches the writer's

    def close(self) -> None:
        """Nothing to release: no lock, no writer (searchers stay usable)."""

    # ---- internals ----------------------------------------------------------------------

    def _names(self) -> list[str]:
        try:
            entries = sorted(os.listdir(self._root))
        except FileNotFoundError:
            return []
        return [name for name in entries if KB_DIRECTORY.fullmatch(name)]

    def _searchable(
        self, search_filter: SearchFilter, limit: int, excluded: frozenset[str] | None = None,
    ) -> tuple[KbIndex, Restrictions] | None:
        if limit <= 0:
            return None
        kb_id = search_filter.kb_id
        return self._clauses.for_kb(search_filter, excluded, lambda: self._kb(
            kb_directory_name(kb_id), kb_id))

    def _kb(self, name: str, kb_id: str | None = None) -> KbIndex | None:
        """The kb's index at the writer's newest commit; None when it has none yet.

        SparseIndexBroken (naming `kb_id` where given) when it exists but cannot be opened.
        """
        directory = self._root / name
        cached = self._kbs.get(name)
        try:
            folder = directory.stat()
            meta = (directory / "meta.json").stat()
        except FileNotFoundError:
            if cached is None and _damaged(directory):
                self._why[name] = "meta.json is missing beside the index files"
                raise broken_error(kb_id or name, self._why[name]) from None
            # not written yet, or between a rebuild's two renames: keep the last view
            return None if cached is None else cached[1]
        signature = (folder.st_ino, meta.st_ino, meta.st_mtime_ns)
        if cached is not None and cached[0] == signature:
            return cached[1]
        with self._lock:
            cached = self._kbs.get(name)
            if cached is not None and cached[0] == signature:
                return cached[1]
            try:
                if cached is not None and cached[0][0] == folder.st_ino:
                    kb = cached[1]
                    kb.reload()  # a new commit of the same index
                else:
                    kb = KbIndex(directory, self._schema)  # first use, or a rebuild switched in
            except SparseLayoutOutdated:
                raise
            except Exception as exc:  # tantivy reports damage as ValueError, files as OSError
                self._why[name] = f"{type(exc).__name__}: {exc}"
                raise broken_error(kb_id or name, self._why[name]) from exc
            self._kbs[name] = (signature, kb)
            return kb


def _damaged(directory: Path) -> bool:
    try:
        return missing_meta(directory)
    except FileNotFoundError:  # no such kb, or switched away a moment ago
        return False


def _read_only(root: Path) -> IndexReadOnly:
    return IndexReadOnly(f"the BM25 store {root} is followed read-only here; its writer is "
                         "another process")
