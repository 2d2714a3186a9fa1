"""LlamaIndex MetadataFilters as ragsift's scope options (pure mapping, no server)."""

from __future__ import annotations

import pytest
from llama_index.core.vector_stores.types import (
    ExactMatchFilter,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

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


@pytest.mark.parametrize(("filters", "message"), [
    (MetadataFilters(filters=[_eq("author", "x")]), "filter key 'author' is not supported"),
    (MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="a",
                                             operator=FilterOperator.NE)]),
     "filter tenant_id != 'a' is not supported"),
    (MetadataFilters(filters=[_eq("tenant_id", "a"), _eq("source", "b")],
                     condition=FilterCondition.OR), "OR across different keys"),
    (MetadataFilters(filters=[_eq("tenant_id", "a")], condition=FilterCondition.NOT),
     "filter condition 'not' is not supported"),
    (MetadataFilters(filters=[MetadataFilter(key="tenant_id", value=3)]), "3 is not a string"),
], ids=["unknown-key", "ne", "or-across-keys", "not", "not-a-string"])
def test_anything_else_is_refused_with_what_is_supported(
    filters: MetadataFilters, message: str,
) -> None:
    with pytest.raises(UnsupportedFilterError, match=message):
        filter_options(filters)
