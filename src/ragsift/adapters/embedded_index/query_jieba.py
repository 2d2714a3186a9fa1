"""jieba's search-mode cut of a short text (a query) without loading jieba's whole dictionary.

Importing rjieba builds its default dictionary (349k words): ~0.12-0.15 CPU-s, a tenth of a
one-shot CLI search, which cuts one query. jieba's cut of a text only ever consults the
dictionary words that are substrings of that text (the DAG's prefixes, the HMM's check of a
run of single characters, search mode's 2- and 3-grams) and the dictionary's total frequency
(every word's log probability is log(freq / total)). So the words a query holds are looked up
in an SQLite copy of the dictionary in the model cache, put into an empty rjieba `Jieba`, and a
filler word no text contains makes its total the full dictionary's: the cut is the same.

The dictionary is the `jieba` package's dict.txt, the one rjieba embeds (every word of it is
in rjieba's, and tests/adapters/embedded_index/test_query_jieba.py checks equal cuts), cached
as a word_list_cache.WordList.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

from ragsift.adapters.word_list_cache import WordList, rows_for, substrings

# private-use characters: no normalised text holds them (a text that does takes rjieba's route)
FILLER = "\U000f8a00\U000f8a01"


def dictionary_path() -> str | None:
    """The `jieba` package's dict.txt, found without importing jieba; None without it."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "dict.txt")
    return path if os.path.isfile(path) else None


def _fill(source: str, db: sqlite3.Connection) -> tuple[Any, ...]:
    """dict.txt's words into the `word` table; (total frequency, longest word). A word listed
    twice keeps its last line and counts twice in the total, as jieba-rs loads it (3 in 60
    million for the one such word, in any case)."""
    words: dict[str, tuple[int, str]] = {}
    total = 0
    with open(source, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if not parts:
                continue
            freq = int(parts[1]) if len(parts) > 1 else 0
            words[parts[0]] = (freq, parts[2] if len(parts) > 2 else "")
            total += freq
    # in key order: appends to the B-tree instead of random inserts
    db.executemany("INSERT INTO word VALUES (?, ?, ?)",
                   ((word, *words[word]) for word in sorted(words)))
    return total, max(len(word) for word in words)


WORDS = WordList(
    name="jieba dictionary", prefix="jieba-words-", format=1, fill=_fill, meta_fields=2,
    schema="CREATE TABLE word (text TEXT PRIMARY KEY, freq INTEGER NOT NULL, "
           "tag TEXT NOT NULL) WITHOUT ROWID;\n",
)


class QueryJieba:
    """rjieba's `cut_for_search` of a short text from the words it holds; opens (or builds) its
    cache on first use. Costs grow with len(text) * the longest word (16): for queries."""

    def __init__(self, cache_dir: Path, source: str) -> None:
        self._cache_dir = cache_dir
        self._source = source
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._total = 0
        self._longest = 1

    def _opened(self) -> sqlite3.Connection:
        with self._lock:
            if self._db is None:
                db, (_, self._total, self._longest) = WORDS.open_or_build(self._cache_dir,
                                                                          self._source)
                self._db = db  # set last: it marks the instance as loaded
            return self._db

    def cut_for_search(self, text: str) -> list[str]:
        if FILLER in text:
            raise ValueError("the text holds the filler word")
        words = self._words(self._opened(), text)
        jieba = _extension().Jieba.empty()
        held = 0
        for word, (freq, tag) in words.items():
            jieba.add_word(word, freq, tag)
            held += freq
        jieba.add_word(FILLER, max(self._total - held, 1), "x")
        return list(jieba.cut_for_search(text))

    def _words(self, db: sqlite3.Connection, text: str) -> dict[str, tuple[int, str]]:
        """The dictionary words among the substrings of `text`, with freq and tag."""
        wanted = substrings(text, self._longest)
        with self._lock:  # one connection, shared by the threads of the process
            return {word: (freq, tag) for word, freq, tag in rows_for(
                db, "SELECT text, freq, tag FROM word WHERE text IN ({marks})", wanted)}


_EXTENSION_LOCK = threading.Lock()


def _extension() -> Any:
    """rjieba's extension module, loaded without its package, whose import builds the default
    dictionary. Registered under its own name, so a later `import rjieba` reuses it (a PyO3
    module cannot be initialised twice in a process)."""
    with _EXTENSION_LOCK:
        module = sys.modules.get("rjieba.rjieba")
        if module is not None:
            return module
        package = importlib.util.find_spec("rjieba")  # finds it, runs nothing
        if package is None or not package.submodule_search_locations:
            raise ImportError("rjieba is not installed")
        for folder in package.submodule_search_locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "rjieba" + suffix)
                if not os.path.isfile(path):
                    continue
                spec = importlib.util.spec_from_file_location("rjieba.rjieba", path)
                if spec is None or spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                sys.modules["rjieba.rjieba"] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules["rjieba.rjieba"]
                    raise
                return module
        raise ImportError("rjieba's extension module is not where its package is")
