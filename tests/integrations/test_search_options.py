"""The retrievers' search options reach the API's request body."""

from __future__ import annotations

from ragsift.integrations.search import RagsiftSearch


def test_consistency_and_feedback_switches_are_passed_on_when_set() -> None:
    search = RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None,
                           consistency=True, feedback=False)
    assert search.search_options() == {"consistency": True, "feedback": False}


def test_unset_switches_leave_the_servers_defaults() -> None:
    search = RagsiftSearch(base_url="http://127.0.0.1:9", kb="hr", api_key=None)
    assert "consistency" not in search.search_options()
    assert "feedback" not in search.search_options()
