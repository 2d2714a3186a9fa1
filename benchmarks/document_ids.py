"""Document ids of the benchmarks' synthetic builds: `d7`, or 32-hex like ragsift's.

ragsift names documents with uuid4 hex; a BM25 whitelist is a term set over them (or over
their 48-bit keys, bm25_schema.py), whose cost follows the ids' bytes, so a build that
measures whitelists should be able to use ids of ragsift's shape."""

from __future__ import annotations

import hashlib
import uuid

ID_SHAPES = ("short", "uuid")


def document_id(doc: int, shape: str) -> str:
    """`d{doc}` (short), or a 32-hex id derived from `doc` (uuid), the same in every run."""
    if shape == "short":
        return f"d{doc}"
    if shape != "uuid":
        raise ValueError(f"id shape must be one of {ID_SHAPES}, got {shape!r}")
    digest = hashlib.sha256(str(doc).encode()).digest()[:16]
    return uuid.UUID(int=int.from_bytes(digest, "big")).hex
