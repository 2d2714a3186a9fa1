"""The BM25 analyzers shared by indexing and querying, for Chinese, English and mixed text.

Version 1 is jieba search mode, lowercased. Version 2 (the default for new indexes) adds, for
each run of CJK characters, its single characters and its character bigrams, and for English
drops stop words and applies the Snowball stemmer. Measured on the dev queries of
../shared/evaldata (docs/quality.md): BM25 nDCG@10 kuake-qtr 0.755 -> 0.82, afqmc-faq
0.212 -> 0.24, scifact 0.658 -> 0.67. An index is always queried with the version it was
built with.
"""

from __future__ import annotations

import operator
import re
import sys
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import Stemmer  # type: ignore[import-not-found]  # PyStemmer (C extension, no stubs)

from ragsift.adapters.embedded_index.query_jieba import FILLER, QueryJieba, dictionary_path

# Unicode major categories that never carry meaning on their own: punctuation, symbols,
# separators and control/format/unassigned characters.
_DROPPED_MAJOR_CATEGORIES = frozenset("PSZC")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# A short list: only words that carry no topic. Negations ("no", "not") are kept on purpose.
ENGLISH_STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
    "this", "to", "was", "will", "with",
))
_stemmer = Stemmer.Stemmer("english")

CURRENT_VERSION = 2


@lru_cache(maxsize=65536)
def _clean_token(token: str) -> tuple[str, ...]:
    """The usable pieces of one segmenter token that is not plain alphanumeric."""
    # Whitespace inside a token would be split apart again by the index's whitespace
    # tokenizer, so split it here and both sides see the same tokens.
    pieces = token.split() if any(ch.isspace() for ch in token) else [token]
    return tuple(
        piece
        for piece in pieces
        if any(unicodedata.category(ch)[0] not in _DROPPED_MAJOR_CATEGORIES for ch in piece)
    )


# texts up to this long may be cut from the words they hold (query_jieba.py); longer ones, or
# any once rjieba's dictionary is loaded, by rjieba itself
QUERY_CHARS = 256
_query_jieba: QueryJieba | None = None


def cut_short_texts_from_cache(cache_dir: Path | None) -> bool:
    """For a process that cuts a query or two (a CLI search): cut short texts from the
    dictionary words they hold, cached in `cache_dir`, instead of loading rjieba's dictionary
    (~0.13 CPU-s). None turns it off. Whether it is on (it needs the `jieba` package's
    dict.txt). The cut is the same either way."""
    global _query_jieba
    source = dictionary_path() if cache_dir is not None else None
    _query_jieba = QueryJieba(cache_dir, source) if cache_dir and source else None
    return _query_jieba is not None


def _cut_for_search(text: str) -> list[str]:
    query_jieba = _query_jieba
    if (query_jieba is not None and len(text) <= QUERY_CHARS and "rjieba" not in sys.modules
            and FILLER not in text):
        return query_jieba.cut_for_search(text)
    import rjieba  # builds its default dictionary on first import

    return rjieba.cut_for_search(text)


def _segment(normalized: str) -> list[str]:
    tokens: list[str] = []
    for token in _cut_for_search(normalized):
        # Fast path: letters and digits only (CJK words, English words, numbers) need no
        # per-character category lookup; everything else goes through the cached check.
        if token.isalnum():
            tokens.append(token)
        else:
            tokens.extend(_clean_token(token))
    return tokens


def analyze_v1(text: str) -> list[str]:
    """NFKC-normalised, lowercased jieba search-mode tokens without punctuation-only tokens."""
    return _segment(unicodedata.normalize("NFKC", text).lower())


@lru_cache(maxsize=65536)
def _english(token: str) -> str | None:
    """The stem of an ASCII word, or None for a stop word."""
    if token in ENGLISH_STOP_WORDS:
        return None
    return str(_stemmer.stemWord(token)) if token.isalpha() else token


def analyze_v2(text: str) -> list[str]:
    """Version 1's tokens (English stemmed, stop words dropped) + CJK unigrams and bigrams.

    The characters and bigrams make BM25 match where jieba segments query and passage
    differently (common in short Chinese questions and titles).
    """
    normalized = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = []
    for token in _segment(normalized):
        if token.isascii():
            english = _english(token)
            if english is not None:
                tokens.append(english)
        else:
            tokens.append(token)
    for run in _CJK_RUN.findall(normalized):
        tokens.extend(run)
        tokens.extend(map(operator.add, run, run[1:]))  # bigrams
    return tokens


ANALYZERS: dict[int, Callable[[str], list[str]]] = {1: analyze_v1, 2: analyze_v2}


def analyzer_for(version: int) -> Callable[[str], list[str]]:
    """The analyzer an index of `version` was built with; ValueError for an unknown one."""
    try:
        return ANALYZERS[version]
    except KeyError:
        raise ValueError(f"unknown BM25 analyzer version {version}") from None


def analyze(text: str) -> list[str]:
    """Version 1 (kept as the name existing indexes were built with)."""
    return analyze_v1(text)
