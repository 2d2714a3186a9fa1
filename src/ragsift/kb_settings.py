"""A knowledge base's own settings (issue 38): a few process settings a KB may override.

The process settings (config.Settings) stay the defaults; a KB stores only its overrides,
each validated by the Settings field of the same name (type and range), and the merged
values by Settings' own cross-checks (overlap under half the chunk, parent >= chunk, ...).

Two groups: INGEST_KEYS change how documents are parsed and chunked, so a change needs a
reindex for the documents already in the KB; SEARCH_KEYS are the defaults of a search of the
KB that a request leaves unset (and the FAQ direct-answer threshold, in search and chat).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import TypeAdapter, ValidationError

from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.requests import SearchRequest

if TYPE_CHECKING:  # the search side imports this module without the ingestion's chunker
    from ragsift.ingestion.profile import IngestProfile

INGEST_KEYS = ("chunk_tokens", "chunk_overlap_tokens", "parent_max_tokens", "ocr",
               "min_asset_pixels")
# Settings key -> the SearchRequest field it is the default of
REQUEST_KEYS = {"mode": "mode", "fusion": "fusion", "top_k": "top_k", "rerank": "rerank",
                "rewrite": "rewrite", "small2big": "small2big", "min_score": "min_score",
                "faq_top_k": "faq_top_k"}
SEARCH_KEYS = (*REQUEST_KEYS, "faq_direct_answer_threshold")
KEYS = (*INGEST_KEYS, *SEARCH_KEYS)


@cache
def _adapter(key: str) -> TypeAdapter[Any]:
    """The validator of Settings field `key`: its type with its Field constraints."""
    info = Settings.model_fields[key]
    return TypeAdapter(Annotated[info.annotation, info])  # type: ignore[arg-type]


def _unknown(key: str) -> InvalidInput:
    return InvalidInput(f"unknown knowledge-base setting {key!r}; known: {', '.join(KEYS)}")


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return str(error["msg"]).removeprefix("Value error, ")


def validate_value(key: str, value: Any) -> Any:
    """`value` as Settings field `key` takes it; InvalidInput naming the key otherwise."""
    if key not in KEYS:
        raise _unknown(key)
    try:
        return _adapter(key).validate_python(value)
    except ValidationError as exc:
        raise InvalidInput(f"{key}: {_first_error(exc)} (got {value!r})") from exc


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` of the CLI: the value as JSON where it parses (numbers, true, null),
    else the text itself (hybrid, off); InvalidInput for no `=` or an unknown key."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InvalidInput(f"expected key=value, not {text!r}")
    if key not in KEYS:
        raise _unknown(key)
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw.strip()
    return key, value


def validate_overrides(settings: Settings, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides checked one by one, then merged with `settings` and checked together
    (Settings' cross-field rules); InvalidInput naming what is wrong."""
    checked = {key: validate_value(key, value) for key, value in overrides.items()}
    merged = {**settings.model_dump(), **checked}
    try:
        Settings.model_validate(merged)  # validate, not __init__: no environment is read
    except ValidationError as exc:
        raise InvalidInput(f"knowledge-base settings: {_first_error(exc)}") from exc
    return checked


def defaults(settings: Settings) -> dict[str, Any]:
    """The process settings' value of every key."""
    return {key: getattr(settings, key) for key in KEYS}


def effective(settings: Settings, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Every key's value for a KB: its override, else the process setting."""
    return {key: overrides.get(key, getattr(settings, key)) for key in KEYS}


def ingest_values(settings: Settings, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The effective values of the keys that need a reindex (what documents are built with)."""
    values = effective(settings, overrides)
    return {key: values[key] for key in INGEST_KEYS}


def ingest_profile(settings: Settings, overrides: Mapping[str, Any]) -> IngestProfile:
    """The KB's chunking, OCR and asset settings, for the preparation of its documents."""
    from ragsift.ingestion.profile import IngestProfile

    return IngestProfile(**ingest_values(settings, overrides))


@dataclass(frozen=True, slots=True)
class SearchDefaults:
    """What a KB's overrides change in a search of it: request fields a request left unset,
    and the FAQ direct-answer threshold (None: the process setting)."""

    request: dict[str, Any]
    faq_direct_threshold: float | None = None


def search_defaults(overrides: Mapping[str, Any]) -> SearchDefaults | None:
    """The KB's search overrides; None when it has none."""
    request = {field: overrides[key] for key, field in REQUEST_KEYS.items() if key in overrides}
    threshold = overrides.get("faq_direct_answer_threshold")
    if not request and threshold is None:
        return None
    return SearchDefaults(request, threshold)


def with_kb_defaults(request: SearchRequest, defaults: SearchDefaults | None) -> SearchRequest:
    """`request` with the KB's defaults for the fields it left unset (None: as it is)."""
    if defaults is None:
        return request
    unset = {field: value for field, value in defaults.request.items()
             if getattr(request, field) is None}
    return request.model_copy(update=unset) if unset else request
