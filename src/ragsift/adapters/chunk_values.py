"""Stored chunk rows to domain values, without SQLAlchemy: the SQL repository and the
read-only SQLite reader of a CLI search (ragsift.adapters.sqlite_reader) share them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ragsift.domain.models import Chunk, Locator
from ragsift.domain.trusted import TrustedBuilder

_chunk = TrustedBuilder(Chunk)
_locator = TrustedBuilder(Locator)

# The chunk columns in the order chunk_from_values unpacks them; the driver-level reads of
# chunk_queries list exactly these, so the table's own column order does not matter.
CHUNK_VALUE_COLUMNS = (
    "id", "document_id", "kb_id", "parent_id", "level", "ordinal", "heading_path", "locator",
    "text", "token_count", "valid_from_seq", "valid_to_seq", "asset_ids",
)


def json_value(value: Any) -> Any:
    """A JSON column's value: decoded already (the JSON type; PostgreSQL drivers) or text."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def chunk_from_values(values: Sequence[Any]) -> Chunk:
    """The domain value of a plain row of CHUNK_VALUE_COLUMNS (a driver's tuple)."""
    # unvalidated: these values were validated on the way in, and retrieval reads chunks on
    # every query, so validating again (or model_construct's default lookups) is overhead
    (id_, document_id, kb_id, parent_id, level, ordinal, heading_path, locator, text_,
     token_count, valid_from_seq, valid_to_seq, asset_ids) = values
    return _chunk({
        "id": id_,
        "document_id": document_id,
        "kb_id": kb_id,
        "parent_id": parent_id,
        "level": level,
        "ordinal": ordinal,
        "heading_path": tuple(json_value(heading_path)),
        "locator": locator_from_json(json_value(locator)),
        "text": text_,
        "token_count": token_count,
        "asset_ids": tuple(json_value(asset_ids) or ()),
        "valid_from_seq": valid_from_seq,
        "valid_to_seq": valid_to_seq,
    })


def locator_from_json(values: dict[str, Any]) -> Locator:
    """A stored locator (JSON: boxes come back as lists) as the domain value, unvalidated."""
    boxes = values.get("boxes")
    if boxes:
        values = {**values, "boxes": tuple(tuple(box) for box in boxes)}
    return _locator(values)
