"""The kb indexes of a BM25 store directory: which exist, each opened on its first use, and
those that cannot be opened kept aside as broken with why (bm25_store.py builds on it)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import tantivy

from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_layout import (
    KB_DIRECTORY,
    IndexInUse,
    SparseLayoutOutdated,
    broken_error,
    missing_meta,
)

# the store's logger: its "cannot be opened" errors keep the name they were always logged under
logger = logging.getLogger("ragsift.adapters.embedded_index.bm25_store")


class Bm25Catalog:
    """Kb indexes by directory name under `root`, opened lazily under one open lock."""

    def __init__(self, root: Path, index_schema: tantivy.Schema) -> None:
        self._root = root
        self._schema = index_schema
        self._open_lock = threading.Lock()
        self._kbs: dict[str, KbIndex] = {}
        # Kb indexes on disk (by directory name); only this process adds to it while locked.
        self._names: set[str] = set()
        # Kb indexes that cannot be opened, with why (never also in _names).
        self._broken: dict[str, str] = {}
        self._scan()

    def _scan(self) -> None:
        """Sort the kb directories on disk into openable ones and visibly damaged ones."""
        for entry in self._root.iterdir():
            if not KB_DIRECTORY.fullmatch(entry.name) or not entry.is_dir():
                continue
            try:
                if (entry / "meta.json").is_file():
                    self._names.add(entry.name)
                elif missing_meta(entry):
                    self._mark_broken(entry.name, "meta.json is missing beside the index files")
                # else a kb whose first write never got as far as creating its index
            except OSError as exc:  # an unreadable directory
                self._mark_broken(entry.name, f"{type(exc).__name__}: {exc}")

    def _opened(self, name: str, kb_id: str | None) -> KbIndex | None:
        return self._kb(name, create=False, kb_id=kb_id)

    def _kb(self, name: str, *, create: bool, kb_id: str | None = None) -> KbIndex | None:
        """The open index of one kb directory; None when it does not exist and not `create`.

        SparseIndexBroken (naming `kb_id` where given) when it cannot be opened.
        """
        kb = self._kbs.get(name)
        if kb is not None:
            return kb
        with self._open_lock:
            kb = self._kbs.get(name)
            if kb is not None:
                return kb
            if name not in self._broken and (create or name in self._names):
                try:
                    kb = KbIndex(self._root / name, self._schema)
                except (SparseLayoutOutdated, IndexInUse):
                    raise
                except Exception as exc:  # tantivy reports damage as ValueError, files as OSError
                    self._mark_broken(name, f"{type(exc).__name__}: {exc}")
                else:
                    self._kbs[name] = kb
                    self._names.add(name)
                    return kb
            reason = self._broken.get(name)
            if reason is None:
                return None
            raise broken_error(kb_id or name, reason)

    def _mark_broken(self, name: str, reason: str) -> None:
        """Keep why a kb index cannot be opened (caller holds the open lock or is __init__)."""
        self._broken[name] = reason
        self._names.discard(name)
        logger.error("the BM25 index %s cannot be opened (%s); its searches and writes fail "
                     "until `ragsift rebuild-sparse` rebuilds it", self._root / name, reason)

    def _kb_names(self) -> list[str]:
        """The kb directories on disk, sorted (a copy: writes may add one meanwhile)."""
        with self._open_lock:
            return sorted(self._names)
