"""Dify's metadata conditions as ragsift filters, and the normalised 0-1 record score."""

from __future__ import annotations

from typing import Any

import pytest

from ragsift.api.dify_mapping import (
    BM25_HALF,
    DifyFilters,
    UnsupportedCondition,
    calibrated_score,
    conditions_to_filters,
    normalised_scores,
)
from ragsift.api.schemas_dify import MetadataCondition
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
    ([_is("tenant_id", "a", "not in")], "and", "'not in'"),
    ([_is("tenant_id", None, "empty")], "and", "'empty'"),
    ([_is("tenant_id", None)], "and", "one value"),
    ([_is("tenant_id", None, "in")], "and", "a list"),
    ([_is("tenant_id", "a"), _is("source", "b")], "or", "source"),
])
def test_conditions_without_a_filter_are_refused(
    conditions: list[dict[str, Any]], operator: str, named: str,
) -> None:
    with pytest.raises(UnsupportedCondition, match=named):
        _filters(*conditions, operator=operator)
