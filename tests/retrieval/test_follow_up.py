"""Follow-up detection and the contextual variant, closed form."""

from __future__ import annotations

import pytest

from ragsift.domain.requests import HistoryMessage
from ragsift.retrieval.follow_up import contextual_query, dependence, follow_up, salient_terms


def _asked(*questions: str) -> list[HistoryMessage]:
    return [HistoryMessage(role="user", content=q) for q in questions]


@pytest.mark.parametrize("message", ["可以提前转正吗？", "那病假呢？", "And for managers?",
                                     "What about international trips?", "它支持多少个设备？",
                                     "How long does it take?", "餐补呢"])
def test_short_or_referring_messages_are_follow_ups(message: str) -> None:
    assert dependence(message) is not None


@pytest.mark.parametrize("message", ["出差住宿标准是多少", "公司的报销流程是什么",
                                     "How do I reset the router to factory settings?"])
def test_a_question_with_its_own_subject_stands_alone(message: str) -> None:
    assert dependence(message) is None


def test_salient_terms_drop_the_asking_words() -> None:
    assert salient_terms("试用期多长？") == ["试用期"]
    assert salient_terms("年假可以结转几天？") == ["年假", "结转"]
    assert salient_terms("What is the hotel limit per night?") == ["hotel", "limit", "night"]


def test_the_contextual_variant_joins_the_follow_up_with_the_earlier_question() -> None:
    found = follow_up("And for managers?", _asked("What is the hotel limit per night?"))
    assert found is not None
    assert contextual_query("And for managers?", found) == "And for managers? hotel limit night"


def test_a_chain_of_follow_ups_reaches_back_to_the_question_that_stood_alone() -> None:
    earlier = _asked("出差住宿标准是多少", "年假可以结转几天？", "那病假呢？")
    found = follow_up("需要证明吗？", earlier)
    assert found is not None and found.salient == ("病假", "年假", "结转")


def test_greetings_and_assistant_answers_are_not_continued() -> None:
    history = [*_asked("你好"), HistoryMessage(role="assistant", content="您好！请问年假…")]
    assert follow_up("年假几天", history) is None


def test_no_history_or_a_standalone_message_gives_no_follow_up() -> None:
    assert follow_up("那病假呢？", []) is None
    assert follow_up("公司的报销流程是什么", _asked("年假几天")) is None
