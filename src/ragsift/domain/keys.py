"""Document keys: a document's stable name in its KB, normalised so one file has one key."""

from __future__ import annotations

import unicodedata

from ragsift.domain.errors import InvalidInput

MAX_KEY_CHARS = 1024


def normalize_key(raw: str) -> str:
    """The key of `raw`: NFC, `/` separators, no `.` or empty segments, no leading `/`.

    A key is a name, never used as a path: `..` segments and control characters are refused.
    """
    key = unicodedata.normalize("NFC", raw).replace("\\", "/")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in key):
        raise InvalidInput(f"document key {raw!r} contains control characters")
    parts = [part for part in key.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"document key {raw!r} has a '..' segment")
    key = "/".join(parts)
    if not key.strip():
        raise InvalidInput("document key must not be empty")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"document key longer than {MAX_KEY_CHARS} characters")
    return key
