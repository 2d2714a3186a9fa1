"""The retrievers' search options reach the API's request body."""

from __future__ import annotations

import pytest

from ragsift.integrations.search import RagsiftSearch, rename_count


def test_consistency_and_feedback_switches_are_passed_on_when_set() -> None:
    search = RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None,
                           consistency=True, feedback=False)
    assert search.search_options() == {"consistency": True, "feedback": False}


def test_unset_switches_leave_the_servers_defaults() -> None:
    search = RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None)
    assert "consistency" not in search.search_options()
    assert "feedback" not in search.search_options()


def test_a_per_call_override_wins_for_that_call_and_is_validated() -> None:
    search = RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None, top_k=5,
                           rerank=False)

    assert search.with_options({"top_k": 1}) == {"top_k": 1, "rerank": False}
    assert search.search_options() == {"top_k": 5, "rerank": False}
    with pytest.raises(ValueError, match="unknown ragsift search options: topk"):
        search.with_options({"topk": 1})
    with pytest.raises(ValueError, match="invalid ragsift search options: top_k"):
        search.with_options({"top_k": 0})


def test_a_metadata_filter_is_an_option_checked_against_the_grammar() -> None:
    search = RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None,
                           filter={"dept": "hr"})

    assert search.search_options() == {"filter": {"dept": "hr"}}
    assert search.with_options({"filter": {"year": {"$gte": 2024}}}) == {
        "filter": {"year": {"$gte": 2024}}}
    with pytest.raises(ValueError, match=r"metadata filter: filter\.year\.\$between"):
        search.with_options({"filter": {"year": {"$between": [1, 2]}}})
    with pytest.raises(ValueError, match="a filter is a non-empty JSON object"):
        RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None, filter={})


def test_a_frameworks_count_name_becomes_top_k_and_a_disagreement_is_refused() -> None:
    assert rename_count({"k": 3, "kb": "hr"}, "k") == {"top_k": 3, "kb": "hr"}
    assert rename_count({"k": 3, "top_k": 3}, "k") == {"top_k": 3}
    assert rename_count({"top_k": 2}, "k") == {"top_k": 2}
    with pytest.raises(ValueError, match="k=3 and top_k=2 disagree"):
        rename_count({"k": 3, "top_k": 2}, "k")
