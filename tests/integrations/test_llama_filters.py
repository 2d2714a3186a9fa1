"""LlamaIndex MetadataFilters as ragsift's scope options or metadata filter (pure mapping,
no server)."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.vector_stores.types import (
    ExactMatchFilter,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from ragsift.domain.metadata_filter import evaluate, parse_filter
from ragsift.integrations.llama_filters import UnsupportedFilterError, filter_options


def _eq(key: str, value: str) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=FilterOperator.EQ)


def _in(key: str, *values: str) -> MetadataFilter:
    return MetadataFilter(key=key, value=list(values), operator=FilterOperator.IN)


def test_eq_and_in_on_scope_keys_become_the_matching_options() -> None:
    filters = MetadataFilters(filters=[
        _eq("tenant_id", "acme"), _in("document_id", "d2", "d1"),
        ExactMatchFilter(key="visibility", value="public"), _in("source", "crm"),
        _eq("dataset_id", "hr"),
    ])

    assert filter_options(filters) == {
        "tenant_ids": ["acme"], "document_ids": ["d1", "d2"], "visibilities": ["public"],
        "sources": ["crm"], "dataset_ids": ["hr"],
    }


def test_and_intersects_per_key_and_with_the_options_given_as_keywords() -> None:
    filters = MetadataFilters(filters=[
        _in("document_id", "d1", "d2", "d3"),
        MetadataFilters(filters=[_in("document_id", "d2", "d3")]),
    ])

    assert filter_options(filters, {"document_ids": ["d3", "d4"]}) == {"document_ids": ["d3"]}
    assert filter_options(MetadataFilters(filters=[_eq("tenant_id", "a"), _eq("tenant_id", "b")])
                          ) == {"tenant_ids": []}  # nothing can match both


def test_or_on_one_key_unites_its_values() -> None:
    filters = MetadataFilters(filters=[_eq("tenant_id", "a"), _in("tenant_id", "b", "c")],
                              condition=FilterCondition.OR)

    assert filter_options(filters) == {"tenant_ids": ["a", "b", "c"]}
    assert filter_options(None) == {}


def _op(key: str, operator: FilterOperator, value: Any = None) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=operator)


@pytest.mark.parametrize(("item", "expected"), [
    (_eq("dept", "hr"), {"dept": {"$eq": "hr"}}),
    (ExactMatchFilter(key="dept", value="hr"), {"dept": {"$eq": "hr"}}),
    (_op("tenant_id", FilterOperator.NE, "a"), {"tenant_id": {"$ne": "a"}}),
    (_op("year", FilterOperator.GT, 2023), {"year": {"$gt": 2023}}),
    (_op("year", FilterOperator.GTE, 2023), {"year": {"$gte": 2023}}),
    (_op("year", FilterOperator.LT, 2.5), {"year": {"$lt": 2.5}}),
    (_op("issued", FilterOperator.LTE, "2024-05-01"),
     {"issued": {"$lte": {"$date": "2024-05-01"}}}),  # an ISO date string orders as a date
    (_op("year", FilterOperator.IN, [2023, 2024]), {"year": {"$in": [2023, 2024]}}),
    (_op("dept", FilterOperator.NIN, ["hr"]), {"dept": {"$nin": ["hr"]}}),
    (_op("tags", FilterOperator.CONTAINS, "leave"), {"tags": {"$contains": "leave"}}),
    (_op("title", FilterOperator.TEXT_MATCH, "pol"), {"title": {"$contains": "pol"}}),
    (_op("tags", FilterOperator.ANY, ["a", "b"]),
     {"$or": [{"tags": {"$contains": "a"}}, {"tags": {"$contains": "b"}}]}),
    (_op("tags", FilterOperator.ALL, ["a", "b"]),
     {"$and": [{"tags": {"$contains": "a"}}, {"tags": {"$contains": "b"}}]}),
    (_op("note", FilterOperator.IS_EMPTY), {"$or": [{"note": {"$exists": False}}, {"note": ""}]}),
])
def test_each_operator_on_a_metadata_key_becomes_the_filter_languages(
    item: MetadataFilter, expected: dict[str, Any],
) -> None:
    assert filter_options(MetadataFilters(filters=[item])) == {"filter": {"$and": [expected]}}


def test_conditions_nest_not_is_none_holds_and_a_keyword_filter_is_anded() -> None:
    inner = MetadataFilters(filters=[_eq("dept", "hr"), _eq("dept", "it")],
                            condition=FilterCondition.NOT)
    filters = MetadataFilters(filters=[_eq("tenant_id", "a"), inner],
                              condition=FilterCondition.OR)

    mapped = filter_options(filters, {"filter": {"year": 2024}})

    assert mapped == {"filter": {"$and": [{"year": 2024}, {"$or": [
        {"tenant_id": {"$eq": "a"}},
        {"$not": {"$or": [{"dept": {"$eq": "hr"}}, {"dept": {"$eq": "it"}}]}}]}]}}
    node = parse_filter(mapped["filter"])
    assert evaluate(node, {"year": 2024, "dept": "x"})
    assert not evaluate(node, {"year": 2024, "dept": "hr"})


@pytest.mark.parametrize(("filters", "message"), [
    (MetadataFilters(filters=[_op("title", FilterOperator.TEXT_MATCH_INSENSITIVE, "a")]),
     "case-insensitive"),
    (MetadataFilters(filters=[_eq("x y", "a")]), "'x y' is not a metadata key"),
    (MetadataFilters(filters=[_op("year", FilterOperator.GT, [1])]), "is not a string, number"),
], ids=["text-match-insensitive", "bad-key", "ordered-list"])
def test_anything_else_is_refused_with_what_is_supported(
    filters: MetadataFilters, message: str,
) -> None:
    with pytest.raises(UnsupportedFilterError, match=message):
        filter_options(filters)
