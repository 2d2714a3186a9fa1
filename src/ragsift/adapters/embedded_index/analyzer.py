"""The BM25 analyzer shared by indexing and querying, for Chinese, English and mixed text."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import rjieba

# Unicode major categories that never carry meaning on their own: punctuation, symbols,
# separators and control/format/unassigned characters.
_DROPPED_MAJOR_CATEGORIES = frozenset("PSZC")


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


def analyze(text: str) -> list[str]:
    """NFKC-normalised, lowercased jieba search-mode tokens without punctuation-only tokens."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = []
    for token in rjieba.cut_for_search(normalized):
        # Fast path: letters and digits only (CJK words, English words, numbers) need no
        # per-character category lookup; everything else goes through the cached check.
        if token.isalnum():
            tokens.append(token)
        else:
            tokens.extend(_clean_token(token))
    return tokens
