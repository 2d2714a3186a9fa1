"""The metadata keys of a set of documents, with their types and a few sample values: what a
filter editor offers (GET /api/kbs/{id}/metadata-keys)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import Value, decode_value, encode_value
from ragsift.domain.metadata_filter import value_kind

SAMPLES = 5  # distinct sample values kept per key


_EDITOR_NAMES = {"bool": "boolean", "str": "string"}


def type_name(value: Value) -> str:
    """The filter editor's name of a typed value's type (the filter's kinds, spelled out)."""
    kind = value_kind(value)
    return _EDITOR_NAMES.get(kind, kind)


@dataclass(slots=True)
class KeySummary:
    """One key: its types (a key may hold several across documents), how many documents set
    it, and up to SAMPLES distinct values (JSON form; a list's elements one by one)."""

    key: str
    types: set[str] = field(default_factory=set)
    documents: int = 0
    samples: list[Any] = field(default_factory=list)

    def add(self, value: Value) -> None:
        self.types.add(type_name(value))
        self.documents += 1
        for item in value if isinstance(value, tuple) else (value,):
            encoded = encode_value(item)
            if len(self.samples) < SAMPLES and encoded not in self.samples:
                self.samples.append(encoded)

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "types": sorted(self.types), "documents": self.documents,
                "samples": self.samples}


def summarize_keys(metadata: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every key of these documents' metadata (JSON form), sorted by key; a stored value that
    does not decode is skipped, as filters skip it."""
    found: dict[str, KeySummary] = {}
    for stored in metadata:
        for key, raw in stored.items():
            try:
                value = decode_value(raw, key)
            except InvalidInput:
                continue
            found.setdefault(key, KeySummary(key)).add(value)
    return [found[key].as_json() for key in sorted(found)]
