"""Query validation: a clear error for unusable queries, never a silent truncation."""

from __future__ import annotations

import unicodedata

from ragsift.domain.errors import InvalidInput


def validate_query(query: str, max_chars: int) -> str:
    """The query with outer whitespace removed, or InvalidInput saying what is wrong."""
    text = query.strip()
    if not text:
        raise InvalidInput("query is empty")
    if len(text) > max_chars:
        raise InvalidInput(
            f"query is {len(text)} characters long; the limit is {max_chars} "
            "(it is rejected rather than truncated)"
        )
    if not any(unicodedata.category(ch)[0] in "LN" for ch in text):
        raise InvalidInput("query has no letters or digits to search for")
    return text
