"""The plan's route after the FAQ search (retrieval/plan.faq_route): `faq_direct` when the top
entry is a direct answer, unless the caller forced the search."""

from __future__ import annotations

from ragsift.domain.results import FaqHit
from ragsift.domain.trace import RouteTrace, StageTrace
from ragsift.retrieval.faq import FaqOutcome
from ragsift.retrieval.plan import faq_route


def _outcome(direct: bool) -> FaqOutcome:
    hit = FaqHit(rank=1, faq_id="f1", question="q", answer="a", source=None, dense_rank=1,
                 dense_score=0.97, sparse_rank=None, sparse_score=None, fusion_score=0.02,
                 retrieval_sources=("dense:original",), direct_answer=direct)
    return FaqOutcome((hit,), StageTrace(status="applied", detail={"threshold": 0.92}))


def test_a_direct_answer_makes_the_route_faq_direct_and_says_why() -> None:
    route = faq_route(RouteTrace(route="search", decided_by="rules"), _outcome(True))

    assert (route.route, route.decided_by) == ("faq_direct", "faq")
    assert route.reason is not None and "f1" in route.reason and "0.9700 >= 0.92" in route.reason


def test_no_direct_answer_or_a_forced_search_keeps_the_search() -> None:
    searched = RouteTrace(route="search", decided_by="rules")
    forced = RouteTrace(route="search", decided_by="request")

    assert faq_route(searched, _outcome(False)) == searched
    assert faq_route(forced, _outcome(True)) == forced
    assert faq_route(searched, FaqOutcome((), StageTrace())) == searched
