"""A word list (e5's vocabulary, jieba's dictionary) kept as an SQLite file in the model cache,
so that a process needing the few entries one text holds looks those up instead of loading
them all (e5_query_tokenizer.py, embedded_index/query_jieba.py).

A file is keyed by its list's format and its source file's path, size and mtime. It is written
aside and renamed into place, so a reader never sees half of one; a build killed midway leaves
only its temporary file, swept once it is an hour old. Anything unexpected in a file (damage,
another format) builds it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.adapters.atomic_files import (
    STALE_TEMPORARY_S,
    remove_stale_temporaries,
    replaced_atomically,
)

logger = logging.getLogger(__name__)

_VARIABLES = 500  # under SQLite's smallest limit of bound variables (999)
_PRAGMAS = "PRAGMA journal_mode = OFF;\nPRAGMA synchronous = OFF;\n"
_META = "CREATE TABLE meta (fields BLOB NOT NULL);\n"


@dataclass(frozen=True, slots=True)
class WordList:
    """How one list is cached: `fill(source, db)` inserts its rows into the tables `schema`
    creates and returns its meta fields, which are marshalled after `format` into a `meta`
    row; `meta_fields` is their number."""

    name: str  # for logs and errors: "e5 vocabulary"
    prefix: str  # of its file names: "e5-vocab-"
    format: int
    schema: str
    fill: Callable[[str, sqlite3.Connection], tuple[Any, ...]]
    meta_fields: int

    def path(self, cache_dir: Path, source: str) -> Path:
        stat = os.stat(source)
        key = f"{self.format}|{os.path.realpath(source)}|{stat.st_size}|{stat.st_mtime_ns}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_dir / f"{self.prefix}{digest}.sqlite"

    def open_or_build(self, cache_dir: Path, source: str
                      ) -> tuple[sqlite3.Connection, tuple[Any, ...]]:
        """A read-only connection (shareable across threads, under the caller's lock) and the
        meta fields, `format` first; built first when absent or unusable."""
        path = self.path(cache_dir, source)
        remove_stale_temporaries(cache_dir, f"{self.prefix}*.tmp", STALE_TEMPORARY_S)
        opened = self._open(path)
        if opened is None:
            self._build(source, path)
            logger.info("%s cached in %s", self.name, path)
            opened = self._open(path)
            if opened is None:
                raise RuntimeError(f"the {self.name} cache {path} does not load once written")
        return opened

    def _build(self, source: str, path: Path) -> None:
        with replaced_atomically(path, self.prefix, ".tmp") as temp, \
                contextlib.closing(sqlite3.connect(temp)) as db:
            db.executescript(_PRAGMAS + self.schema + _META)
            meta = (self.format, *self.fill(source, db))
            db.execute("INSERT INTO meta VALUES (?)", (marshal.dumps(meta),))
            db.commit()

    def _open(self, path: Path) -> tuple[sqlite3.Connection, tuple[Any, ...]] | None:
        if not path.is_file():
            return None
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            (blob,) = db.execute("SELECT fields FROM meta").fetchone()
            meta = marshal.loads(blob)
        except (sqlite3.Error, EOFError, ValueError, TypeError) as exc:
            if db is not None:  # not left open on the file the build replaces
                db.close()
            logger.warning("%s cache %s unreadable (%s): building it again", self.name, path, exc)
            return None
        if not (isinstance(meta, tuple) and len(meta) == 1 + self.meta_fields
                and meta[0] == self.format):
            db.close()
            logger.warning("%s cache %s is of another format: building it again", self.name,
                           path)
            return None
        return db, meta


def substrings(text: str, longest: int) -> list[str]:
    """Every distinct substring of `text` up to `longest` characters, sorted."""
    size = len(text)
    return sorted({text[start:end] for start in range(size)
                   for end in range(start + 1, min(size, start + longest) + 1)})


def rows_for(db: sqlite3.Connection, select: str, keys: Sequence[str]) -> Iterator[Any]:
    """The rows of `select` (ending in `IN ({marks})`) for `keys`, a few hundred at a time."""
    for batch in _batches(keys, _VARIABLES):
        yield from db.execute(select.format(marks=",".join("?" * len(batch))), batch)


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for offset in range(0, len(items), size):
        yield items[offset : offset + size]
