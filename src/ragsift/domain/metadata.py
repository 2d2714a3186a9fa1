"""Document metadata the user owns: a flat object of typed values, validated and bounded.

Values: string, number (int or float), boolean, date, datetime, and lists of strings. JSON has
no date type, so a date is stored and shown as the tagged object `{"$date": "2024-05-01"}`
and a datetime as `{"$datetime": "2024-05-01T09:30:00+00:00"}` (a datetime without offset is
UTC): a date stays a date through storage, the API and filters, never a string.

Keys: KEY_PATTERN (a letter, then letters, digits, `_`, `.`, `-`; at most 64 characters; CJK
letters are letters). The built-in scope fields' names are reserved (RESERVED_KEYS): a filter
on them reaches the document's scope, never a user value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from ragsift.domain.errors import InvalidInput

KEY_PATTERN = re.compile(r"[^\W\d_][\w.\-]{0,63}")
# the scope fields (and ids) a filter may name as built-ins, and the ones no user key may take
SCOPE_KEYS = frozenset({"source", "tenant_id", "dataset_id", "visibility", "document_id"})
RESERVED_KEYS = SCOPE_KEYS | frozenset({"kb_id", "chunk_id", "allowed_roles", "roles",
                                        "kb_version", "version", "filename"})
# a document's allowed roles in its filter record: a `$` name no filter can name (the scope
# stage reads it to keep the filter within the caller's roles)
ROLES_FIELD = "$allowed_roles"

Scalar = str | int | float | bool | date | datetime
Value = Scalar | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MetadataLimits:
    """Bounds of one document's metadata (settings metadata_*)."""

    max_keys: int = 64
    max_string_chars: int = 1024
    max_list_items: int = 100
    max_bytes: int = 16384


def check_key(key: str) -> str:
    """`key`, or InvalidInput saying why it cannot name a metadata field."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise InvalidInput(
            f"metadata key {key!r} is invalid: a letter, then letters, digits, '_', '.' or "
            "'-', at most 64 characters")
    if key in RESERVED_KEYS:
        raise InvalidInput(f"metadata key {key!r} is reserved for a built-in field")
    return key


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def parse_date(text: str) -> date | datetime | None:
    """An ISO date or datetime (`T` or space separated), else None."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            return None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",
                    text):
        try:
            return _aware(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def decode_value(raw: Any, where: str) -> Value:
    """A JSON value (tagged dates included) as a typed value; InvalidInput names `where`."""
    if isinstance(raw, bool | str):
        return raw
    if isinstance(raw, int | float):
        if isinstance(raw, float) and not math.isfinite(raw):
            raise InvalidInput(f"{where}: numbers must be finite")
        return raw
    if isinstance(raw, list | tuple):
        if not all(isinstance(item, str) for item in raw):
            raise InvalidInput(f"{where}: a list may hold strings only")
        return tuple(raw)
    if isinstance(raw, Mapping) and len(raw) == 1:
        (tag, text), = raw.items()
        if tag in ("$date", "$datetime") and isinstance(text, str):
            parsed = parse_date(text)
            if tag == "$date" and type(parsed) is date:
                return parsed
            if tag == "$datetime" and isinstance(parsed, datetime):
                return parsed
            raise InvalidInput(f"{where}: {text!r} is not an ISO {tag[1:]}")
    if isinstance(raw, date):
        return _aware(raw) if isinstance(raw, datetime) else raw
    raise InvalidInput(
        f"{where}: a value is a string, number, boolean, list of strings, "
        f"{{\"$date\": \"YYYY-MM-DD\"}} or {{\"$datetime\": \"ISO 8601\"}}; got {raw!r}")


def encode_value(value: Value) -> Any:
    """The JSON form of a typed value (dates tagged)."""
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, tuple):
        return list(value)
    return value


def validate_metadata(raw: Any, limits: MetadataLimits) -> dict[str, Any]:
    """A document's metadata checked (keys, types, sizes) and returned in its JSON form."""
    if not isinstance(raw, Mapping):
        raise InvalidInput("metadata must be a JSON object of key: value")
    if len(raw) > limits.max_keys:
        raise InvalidInput(f"metadata has {len(raw)} keys; at most {limits.max_keys}")
    encoded: dict[str, Any] = {}
    for key, item in raw.items():
        check_key(key)
        value = decode_value(item, f"metadata.{key}")
        texts = value if isinstance(value, tuple) else (value,) if isinstance(value, str) else ()
        if isinstance(value, tuple) and len(value) > limits.max_list_items:
            raise InvalidInput(f"metadata.{key}: {len(value)} items; at most "
                               f"{limits.max_list_items}")
        if any(len(text) > limits.max_string_chars for text in texts):
            raise InvalidInput(f"metadata.{key}: a string longer than "
                               f"{limits.max_string_chars} characters")
        encoded[key] = encode_value(value)
    size = len(json.dumps(encoded, ensure_ascii=False).encode("utf-8"))
    if size > limits.max_bytes:
        raise InvalidInput(f"metadata is {size} bytes as JSON; at most {limits.max_bytes}")
    return encoded


def decode_metadata(stored: Mapping[str, Any]) -> dict[str, Value]:
    """Stored (already validated) metadata as typed values; entries that do not decode (written
    by ragsift itself before metadata was typed) are left out."""
    typed: dict[str, Value] = {}
    for key, raw in stored.items():
        try:
            typed[key] = decode_value(raw, key)
        except InvalidInput:
            continue
    return typed


def cli_value(text: str) -> Value:
    """A command-line value: a JSON string literal stays a string, then a number, a boolean
    or an ISO date/datetime when it parses as one, else the text as a string."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            return text
        return loaded if isinstance(loaded, str) else text
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text):
        return float(text)
    moment = parse_date(text)
    return text if moment is None else moment


def cli_pairs(pairs: list[str]) -> dict[str, Any]:
    """`key=value` arguments as metadata in its JSON form (validated later, with the limits)."""
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"expected key=value, got {pair!r}")
        result[key.strip()] = encode_value(cli_value(text))
    return result


def merge_metadata(current: Mapping[str, Any], patch: Mapping[str, Any],
                   limits: MetadataLimits) -> dict[str, Any]:
    """`current` changed by `patch` as a JSON merge patch (RFC 7386, one level): a key set to
    null is removed, any other replaces or adds; the result is validated whole."""
    if not isinstance(patch, Mapping):
        raise InvalidInput("metadata must be a JSON object of key: value")
    merged = {key: value for key, value in current.items() if key not in patch}
    merged.update((key, value) for key, value in patch.items() if value is not None)
    return validate_metadata(merged, limits)


@dataclass(frozen=True, slots=True)
class MetadataUpdate:
    """A document's metadata after an update, and whether the update wrote it: decided
    against the metadata as it was at the write, not as a caller read it before (another
    change may land between the two)."""

    metadata: dict[str, Any]
    changed: bool


def same_metadata(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal as stored JSON. Python's == takes True for 1 and 0.0 for False, but a filter does
    not (`$eq: true` passes true only), so a change of a value's type is a change."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
