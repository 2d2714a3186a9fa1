"""LlamaIndex `MetadataFilters` as ragsift search options.

ragsift filters a search by scope fields, each a list of accepted values; that is what a filter
can say here: `EQ` (one value) or `IN` (a list) on `document_id`, `source`, `tenant_id`,
`dataset_id` or `visibility`. Filters under `AND` intersect per field; under `OR` they must all
be on one field (their values are united). Any other key, operator or condition (NE, NIN, GT,
NOT, ...) raises `UnsupportedFilterError` rather than being ignored: an ignored filter would
widen the results silently.
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

__all__ = ["FILTER_FIELDS", "UnsupportedFilterError", "filter_options"]

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
) -> dict[str, list[str]]:
    """The search options that apply `filters`, intersected with the same options already in
    `options` (a constructor's `document_ids=...`); sorted lists, an empty one matching nothing."""
    if filters is None:
        return {}
    accepted = _accepted(filters)
    result: dict[str, list[str]] = {}
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
