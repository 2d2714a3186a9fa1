"""Dify's metadata conditions as ragsift filters, and the normalised 0-1 record score."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from ragsift.api.dify_conditions import UnsupportedCondition, condition_filter
from ragsift.api.dify_mapping import (
    BM25_HALF,
    DifyFilters,
    calibrated_score,
    conditions_to_filters,
    normalised_scores,
)
from ragsift.api.schemas_dify import MetadataCondition
from ragsift.domain.metadata import Value
from ragsift.domain.metadata_filter import evaluate, parse_filter
from ragsift.domain.metadata_predicate import compile_predicate
from ragsift.domain.models import Locator
from ragsift.domain.results import RetrievalHit


def _hit(rank: int, dense: float | None = None, sparse: float | None = None,
         rerank: float | None = None) -> RetrievalHit:
    return RetrievalHit(
        rank=rank, chunk_id=f"c{rank}", document_id="d", filename="f.md", text="t",
        heading_path=(), locator=Locator(), parent_id=None, dense_rank=None,
        dense_score=dense, sparse_rank=None, sparse_score=sparse, fusion_score=0.0,
        rerank_score=rerank, retrieval_sources=(),
    )


def _filters(*conditions: dict[str, Any], operator: str = "and") -> DifyFilters:
    return conditions_to_filters(MetadataCondition.model_validate(
        {"logical_operator": operator, "conditions": list(conditions)}))


def _is(name: str | list[str], value: Any, operator: str = "is") -> dict[str, Any]:
    return {"name": name, "comparison_operator": operator, "value": value}


def test_the_rerank_score_wins_and_is_squashed_only_outside_zero_to_one() -> None:
    assert calibrated_score(_hit(1, dense=0.9, rerank=0.3)) == 0.3
    assert calibrated_score(_hit(1, dense=0.9, rerank=0.0)) == 0.0
    assert calibrated_score(_hit(1, rerank=3.0)) == pytest.approx(0.952574, abs=1e-6)
    assert calibrated_score(_hit(1, rerank=-800.0)) == pytest.approx(0.0)


def test_without_rerank_the_dense_cosine_is_clipped_else_bm25_is_saturated() -> None:
    assert calibrated_score(_hit(1, dense=0.83, sparse=12.0)) == 0.83
    assert calibrated_score(_hit(1, dense=-0.2)) == 0.0
    assert calibrated_score(_hit(1, sparse=BM25_HALF)) == 0.5
    assert calibrated_score(_hit(1)) == 0.0


def test_a_record_scores_at_least_what_every_record_ranked_below_it_scores() -> None:
    hits = [_hit(1, sparse=5.0), _hit(2, dense=0.9), _hit(3, dense=0.95), _hit(4, dense=0.4)]

    assert normalised_scores(hits) == [0.95, 0.95, 0.95, 0.4]
    assert normalised_scores([]) == []


def test_no_condition_is_no_filter() -> None:
    assert conditions_to_filters(None) == DifyFilters()
    assert conditions_to_filters(MetadataCondition(conditions=None)) == DifyFilters()


def test_and_intersects_the_values_of_one_field_and_sets_each_field() -> None:
    filters = _filters(_is("tenant_id", ["a", "b", "c"], "in"), _is("tenant_id", "b"),
                       _is(["visibility"], "public"), _is("source", 7, "="))

    assert filters == DifyFilters(tenant_ids=("b",), visibilities=("public",), sources=("7",))


def test_or_unites_the_values_of_one_field_and_filenames_have_an_alias() -> None:
    filters = _filters(_is("filename", "a.md"), _is("document_name", "b.md"), operator="or")

    assert filters == DifyFilters(filenames=("a.md", "b.md"))


@pytest.mark.parametrize(("conditions", "operator", "named"), [
    ([_is(["tenant_id", "source"], "a")], "and", "one field"),
    ([_is("tenant_id", "a", "between")], "and", "'between'.*is not one of Dify's"),
    ([_is("dept", None)], "and", "one value"),
    ([_is("dept", ["a"])], "and", "use 'in'"),
    ([_is("dept", None, "in")], "and", "a list"),
    ([_is("x y", "a")], "and", "'x y' is not a metadata key"),
    ([_is("issued", "soon", "before")], "and", "Unix timestamp or an ISO date"),
])
def test_conditions_without_a_filter_are_refused(
    conditions: list[dict[str, Any]], operator: str, named: str,
) -> None:
    with pytest.raises(UnsupportedCondition, match=named):
        _filters(*conditions, operator=operator)


def test_other_operators_and_fields_become_one_metadata_filter_beside_the_scope() -> None:
    filters = _filters(_is("tenant_id", "acme"), _is("dept", "hr"),
                       _is("tenant_id", "ac", "contains"))

    assert filters.tenant_ids == ("acme",)
    assert filters.metadata == {"$and": [{"dept": {"$in": ["hr"]}},
                                         {"tenant_id": {"$contains": "ac"}}]}


def test_or_across_fields_is_one_metadata_filter_with_file_names_resolved() -> None:
    asked: list[dict[str, Any]] = []

    def filename_ids(raw: dict[str, Any]) -> list[str]:
        asked.append(raw)
        return ["d1"]

    filters = conditions_to_filters(MetadataCondition.model_validate({
        "logical_operator": "or", "conditions": [
            _is("source", "wiki"), _is(["document_name"], "leave", "start with")]}),
        filename_ids)

    assert filters == DifyFilters(metadata={"$or": [{"source": {"$in": ["wiki"]}},
                                                    {"document_id": {"$in": ["d1"]}}]})
    assert asked == [{"filename": {"$startswith": "leave"}}]


DOCS: dict[str, dict[str, Value]] = {
    "hr": {"dept": "hr", "year": 2024, "code": "HR-007", "issued": date(2024, 5, 1),
           "at": datetime(2024, 5, 1, 9, 30, tzinfo=UTC), "stamp": 1714555800,
           "tags": ("policy", "leave"), "note": ""},
    "it": {"dept": "it", "year": 2023, "code": "IT-12", "issued": date(2023, 1, 2)},
    "bare": {},
}
MAY_1 = 1714521600  # 2024-05-01T00:00:00Z


def _matching(operator: str, field: str, value: Any) -> set[str]:
    node = parse_filter(condition_filter(field, operator, value))
    found = {name for name, record in DOCS.items() if evaluate(node, record)}
    assert found == {name for name, record in DOCS.items()  # the search's fast path agrees
                     if compile_predicate(node)(record)}
    return found


@pytest.mark.parametrize(("operator", "field", "value", "expected"), [
    ("is", "dept", "hr", {"hr"}),
    ("is", "year", "2024", {"hr"}),  # Dify's form sends strings: the typed value matches
    ("is not", "dept", "hr", {"it", "bare"}),
    ("in", "dept", ["hr", "it"], {"hr", "it"}),
    ("in", "year", [2023], {"it"}),
    ("not in", "dept", ["hr"], {"it", "bare"}),
    ("=", "year", 2024, {"hr"}),
    ("≠", "year", "2024", {"it", "bare"}),
    (">", "year", 2023, {"hr"}),
    ("<", "year", "2024", {"it"}),
    ("≥", "year", 2023, {"hr", "it"}),
    ("≤", "year", 2023.5, {"it"}),
    ("contains", "code", "-0", {"hr"}),
    ("contains", "tags", "leave", {"hr"}),  # on a list: an element
    ("not contains", "code", "-0", {"it", "bare"}),
    ("start with", "code", "IT", {"it"}),
    ("end with", "code", "007", {"hr"}),
    ("empty", "note", None, {"hr", "it", "bare"}),  # "" or absent
    ("not empty", "code", None, {"hr", "it"}),
    ("null", "note", None, {"it", "bare"}),
    ("not null", "note", None, {"hr"}),
    ("before", "issued", "2024-05-01", {"it"}),
    ("before", "issued", "2024-05-01T12:00:00Z", {"hr", "it"}),  # a date is its midnight
    ("after", "issued", "2024-05-01T00:00:00+00:00", set()),
    ("after", "issued", MAY_1 - 1, {"hr"}),  # a Unix timestamp, Dify's time type
    ("before", "at", "2024-05-01T11:00:00+01:00", {"hr"}),  # 10:00Z
    ("before", "at", "2024-05-01T10:00:00+01:00", set()),
    ("after", "at", MAY_1 + 9 * 3600, {"hr"}),
    ("before", "stamp", "2024-05-02", {"hr"}),  # a timestamp stored as a number
    ("after", "stamp", MAY_1 + 10 * 3600, set()),
])
def test_each_dify_operator_holds_on_the_documents_it_names(
    operator: str, field: str, value: Any, expected: set[str],
) -> None:
    assert _matching(operator, field, value) == expected


@pytest.mark.parametrize("value", [1e20, -1e20, float("nan"), "9999-12-31T23:00:00-05:00",
                                   "0001-01-01T00:00:00+01:00"])
def test_a_time_condition_on_an_impossible_instant_is_refused_not_a_server_error(
    value: float | str,
) -> None:
    with pytest.raises(UnsupportedCondition, match="Unix timestamp"):
        condition_filter("published", "before", value)
