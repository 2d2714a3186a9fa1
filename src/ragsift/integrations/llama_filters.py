"""LlamaIndex `MetadataFilters` as ragsift search options.

Filters that are only `EQ` (one value) or `IN` (a list) on the scope fields `document_id`,
`source`, `tenant_id`, `dataset_id` or `visibility`, under `AND` (intersected per field) or
under `OR` on one field (united), become the scope options, as before metadata existed.
Anything else becomes ragsift's metadata `filter` (domain/metadata_filter.py; ANDed with a
`filter` given as a keyword), on any metadata key:

    EQ NE GT GTE LT LTE IN NIN   $eq $ne $gt $gte $lt $lte $in $nin (an ISO date string
                                 compared with GT..LTE is a date)
    CONTAINS, TEXT_MATCH         $contains (a list element; in a string, a substring)
    ANY / ALL                    some / every value $contains'ed
    IS_EMPTY                     absent or ""
    AND / OR / NOT, nested       $and / $or / none of them holds (LlamaIndex's NOT)

What has no filter (TEXT_MATCH_INSENSITIVE, a value that is no string, number or boolean, a
key that is no metadata key) raises `UnsupportedFilterError` rather than being ignored: an
ignored filter would widen the results silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.vector_stores.types import (
    ExactMatchFilter,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import encode_value, parse_date
from ragsift.domain.metadata_filter import parse_filter

__all__ = ["FILTER_FIELDS", "UnsupportedFilterError", "filter_options", "metadata_filter"]

# metadata key -> the search option holding its accepted values
FILTER_FIELDS = {
    "document_id": "document_ids", "source": "sources", "tenant_id": "tenant_ids",
    "dataset_id": "dataset_ids", "visibility": "visibilities",
}
_SUPPORTED = (f"EQ or IN on {', '.join(FILTER_FIELDS)}, combined with AND (or OR on one key)")

Accepted = dict[str, frozenset[str]]


class UnsupportedFilterError(ValueError):
    """A LlamaIndex metadata filter ragsift's search cannot apply."""


def filter_options(
    filters: MetadataFilters | None, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The search options that apply `filters`, intersected with the same options already in
    `options` (a constructor's `document_ids=...`, `filter=...`): scope options as sorted
    lists (an empty one matching nothing), else a metadata `filter`."""
    if filters is None:
        return {}
    try:
        accepted = _accepted(filters)
    except UnsupportedFilterError:
        raw = metadata_filter(filters)
        given = (options or {}).get("filter")
        return {"filter": raw if given is None else {"$and": [given, raw]}}
    result: dict[str, Any] = {}
    for key, values in accepted.items():
        option = FILTER_FIELDS[key]
        given = (options or {}).get(option)
        narrowed = values if given is None else values & {str(v) for v in given}
        result[option] = sorted(narrowed)
    return result


def _accepted(filters: MetadataFilters) -> Accepted:
    parts = [_one(item) if not isinstance(item, MetadataFilters) else _accepted(item)
             for item in filters.filters]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return _intersect(parts)
    if condition == FilterCondition.OR:
        return _unite(parts)
    raise UnsupportedFilterError(
        f"filter condition {condition.value!r} is not supported; ragsift supports {_SUPPORTED}")


def _one(item: MetadataFilter | ExactMatchFilter) -> Accepted:
    if item.key not in FILTER_FIELDS:
        raise UnsupportedFilterError(
            f"filter key {item.key!r} is not supported; ragsift supports {_SUPPORTED}")
    operator = getattr(item, "operator", FilterOperator.EQ)
    if operator == FilterOperator.EQ:
        return {item.key: frozenset({_text(item.key, item.value)})}
    if operator == FilterOperator.IN and isinstance(item.value, Sequence) \
            and not isinstance(item.value, str):
        return {item.key: frozenset(_text(item.key, value) for value in item.value)}
    raise UnsupportedFilterError(
        f"filter {item.key} {operator.value} {item.value!r} is not supported; "
        f"ragsift supports {_SUPPORTED}")


def _text(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise UnsupportedFilterError(f"filter {key}: {value!r} is not a string")
    return value


def _intersect(parts: list[Accepted]) -> Accepted:
    merged: Accepted = {}
    for part in parts:
        for key, values in part.items():
            merged[key] = merged[key] & values if key in merged else values
    return merged


def _unite(parts: list[Accepted]) -> Accepted:
    keys = {key for part in parts for key in part}
    if any(len(part) != 1 for part in parts) or len(keys) > 1:
        raise UnsupportedFilterError(
            "OR across different keys is not supported (ragsift's scope filters are ANDed); "
            f"ragsift supports {_SUPPORTED}")
    if not keys:
        return {}
    key = keys.pop()
    return {key: frozenset().union(*(part[key] for part in parts))}


_COMPARE = {FilterOperator.EQ: "$eq", FilterOperator.NE: "$ne", FilterOperator.GT: "$gt",
            FilterOperator.GTE: "$gte", FilterOperator.LT: "$lt", FilterOperator.LTE: "$lte",
            FilterOperator.IN: "$in", FilterOperator.NIN: "$nin"}
_ORDER = frozenset({FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE})


def metadata_filter(filters: MetadataFilters) -> dict[str, Any]:
    """`filters` as one filter of ragsift's filter language (UnsupportedFilterError for
    what it cannot say); checked against its grammar."""
    raw = _node(filters)
    try:
        parse_filter(raw)
    except InvalidInput as exc:
        raise UnsupportedFilterError(f"filter not supported: {exc}") from None
    return raw


def _node(filters: MetadataFilters) -> dict[str, Any]:
    parts = [_node(item) if isinstance(item, MetadataFilters) else _clause(item)
             for item in filters.filters]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:  # LlamaIndex: none of the filters holds
        return {"$not": {"$or": parts}}
    return {"$or" if condition == FilterCondition.OR else "$and": parts}


def _clause(item: MetadataFilter | ExactMatchFilter) -> dict[str, Any]:
    key, value = item.key, item.value
    operator = getattr(item, "operator", FilterOperator.EQ)
    if operator == FilterOperator.IS_EMPTY:
        return {"$or": [{key: {"$exists": False}}, {key: ""}]}
    if operator in (FilterOperator.CONTAINS, FilterOperator.TEXT_MATCH):
        return {key: {"$contains": _scalar(key, value)}}
    if operator in (FilterOperator.ANY, FilterOperator.ALL):
        values = value if isinstance(value, list) else [value]
        parts = [{key: {"$contains": _scalar(key, v)}} for v in values]
        return {"$or" if operator == FilterOperator.ANY else "$and": parts}
    if operator in (FilterOperator.IN, FilterOperator.NIN):
        values = value if isinstance(value, list) else [value]
        return {key: {_COMPARE[operator]: [_scalar(key, v) for v in values]}}
    if operator in _COMPARE:
        operand = _scalar(key, value)
        if operator in _ORDER and isinstance(operand, str) and parse_date(operand) is not None:
            operand = encode_value(parse_date(operand))  # type: ignore[arg-type]
        return {key: {_COMPARE[operator]: operand}}
    raise UnsupportedFilterError(
        f"filter {key} {operator.value} {value!r} is not supported (no ragsift filter: "
        "case-insensitive text match)")


def _scalar(key: str, value: object) -> Any:
    if isinstance(value, bool | int | float | str):
        return value
    raise UnsupportedFilterError(f"filter {key}: {value!r} is not a string, number or boolean")
