"""The plan's route on the real stack: greetings and requests for a person are not searched,
the trace says why, and a request (or the settings) can make them a search again."""

from __future__ import annotations

from ragsift.domain.models import KnowledgeBase
from retrieval.real_stack import QUIET, ServiceFactory, search


def test_a_greeting_searches_neither_documents_nor_faq_and_the_trace_says_why(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, "你好！", **QUIET)

    assert (result.hits, result.faq_hits) == ((), ())
    route = result.trace.route
    assert (route.route, route.decided_by, route.kind, route.language) == (
        "chitchat", "rules", "greeting", "zh")
    assert result.trace.channels == ()
    assert result.trace.faq.reason == "not searched: the route is chitchat"


def test_a_request_for_a_person_is_routed_to_handoff_without_a_search(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, "I want to talk to a human", **QUIET)

    assert result.hits == () and result.trace.route.route == "handoff"
    assert result.trace.channels == ()


def test_a_question_that_starts_with_a_greeting_is_searched(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, "你好，年假可以结转几天？", **QUIET)

    assert result.trace.route.route == "search"
    assert result.hits and "年假" in result.hits[0].text


def test_the_request_can_force_the_search_of_a_greeting(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, "hello", route="search", **QUIET)

    route = result.trace.route
    assert (route.route, route.decided_by) == ("search", "request")
    assert result.trace.channels != ()


def test_with_the_route_rules_off_every_message_is_searched(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(route_rules=False), kb, "thanks", **QUIET)

    assert (result.trace.route.route, result.trace.route.decided_by) == ("search", "default")
    assert result.trace.channels != ()
