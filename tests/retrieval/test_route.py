"""The rules of a message's route, and their precision on a labelled set of 296 messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.retrieval.route import classify, normalise

ROUTES = Path(__file__).with_name("data") / "routes.jsonl"


def _labelled() -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in ROUTES.read_text("utf-8").splitlines() if line]
    return [(row["message"], row["route"]) for row in rows]


def test_the_labelled_set_has_at_least_200_real_questions_and_every_route() -> None:
    routes = [route for _, route in _labelled()]
    assert routes.count("search") >= 200
    assert routes.count("chitchat") >= 40 and routes.count("handoff") >= 20


def test_no_real_question_of_the_labelled_set_is_routed_away_from_the_search() -> None:
    dropped = [m for m, route in _labelled() if route == "search" and classify(m).route != route]
    assert dropped == []


def test_non_search_routes_are_precise_and_find_most_greetings_and_handoffs() -> None:
    labelled = _labelled()
    for route in ("chitchat", "handoff"):
        predicted = [gold for m, gold in labelled if classify(m).route == route]
        precision = predicted.count(route) / len(predicted)
        recall = predicted.count(route) / sum(1 for _, gold in labelled if gold == route)
        assert precision >= 0.98, route
        assert recall >= 0.9, route


@pytest.mark.parametrize("message", ["你好", "您好！", "Hi!", "hello there", "在吗？"])
def test_a_bare_greeting_is_chitchat_of_kind_greeting(message: str) -> None:
    decision = classify(message)
    assert (decision.route, decision.kind) == ("chitchat", "greeting")


def test_thanks_wins_over_the_other_kinds_in_one_message() -> None:
    assert classify("好的，谢谢！再见").kind == "thanks"
    assert classify("ok bye").kind == "farewell"


@pytest.mark.parametrize("message", [
    "你好，年假有几天？", "Thanks, and the hotel limit?", "hello world example", "his salary",
    "人工智能", "怎么转人工？", "agent", "客服电话是多少",
])
def test_a_greeting_word_beside_content_or_inside_a_word_stays_a_search(message: str) -> None:
    assert classify(message).route == "search"


@pytest.mark.parametrize("message", ["帮我转人工", "人工", "I want to talk to a human",
                                     "human please", "联系客服"])
def test_a_request_for_a_person_is_handoff(message: str) -> None:
    assert classify(message).route == "handoff"


def test_a_long_message_is_a_search_whatever_it_is_made_of() -> None:
    assert classify("谢谢" * 30).route == "search"


def test_fillers_alone_are_not_a_greeting() -> None:
    assert classify("呀呀呀").route == "search"
    assert classify("?!").route == "search"


def test_the_language_of_the_reply_follows_the_script_of_the_message() -> None:
    assert classify("谢谢").language == "zh"
    assert classify("thanks").language == "en"


def test_normalise_folds_width_case_and_punctuation() -> None:
    assert normalise("ＨＥＬＬＯ，，  World！") == "hello world"
