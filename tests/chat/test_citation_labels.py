"""Citation labels of the specification (`[来源 N]`, `[Source N]`, `[N]`), combined targets split
into separate links, out-of-range targets dropped, and the prompt's form per language."""

from __future__ import annotations

import pytest

from chat.chat_factories import HOTEL, LEAVE, evidence
from ragsift.chat.citations import strip_citations, validate_citations
from ragsift.chat.prompt import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_ZH,
    build_messages,
    conversation_is_chinese,
)

EVIDENCE = [evidence(1), evidence(2), evidence(3)]


def _cited(text: str) -> tuple[str, list[int]]:
    checked = validate_citations(text, EVIDENCE)
    return checked.answer, [c.n for c in checked.citations]


@pytest.mark.parametrize("link", [
    "[来源 2](citation://2)", "[Source 2](citation://2)", "[2](citation://2)",
])
def test_every_label_form_cites_its_target_and_stays_as_written(link: str) -> None:
    assert _cited(f"上限 150 美元{link}。") == (f"上限 150 美元{link}。", [2])


def test_labels_are_written_in_normal_form() -> None:
    assert _cited("甲[来源2](citation://2)。") == ("甲[来源 2](citation://2)。", [2])
    assert _cited("a [ Source  3 ](CITATION://3).") == ("a [Source 3](citation://3).", [3])


@pytest.mark.parametrize(("text", "expected", "numbers"), [
    # the target decides; the label is rewritten to name it
    ("a [来源 1](citation://3).", "a [来源 3](citation://3).", [3]),
    ("a [1](citation://2).", "a [2](citation://2).", [2]),
    ("a [01](citation://1).", "a [1](citation://1).", [1]),
    # free-text labels get the word of their language
    ("a [the policy](citation://2).", "a [Source 2](citation://2).", [2]),
    ("甲[见政策](citation://2)。", "甲[来源 2](citation://2)。", [2]),
    # combined targets become one link per number
    ("a [1,2](citation://1,2).", "a [1](citation://1)[2](citation://2).", [1, 2]),
    ("甲[来源 1，3](citation://1，3)。", "甲[来源 1](citation://1)[来源 3](citation://3)。",
     [1, 3]),
    ("a [Source 2](citation://2, 1).", "a [Source 2](citation://2)[Source 1](citation://1).",
     [2, 1]),
    ("a [1,1](citation://1,1).", "a [1](citation://1).", [1]),
])
def test_targets_decide_and_combined_targets_are_split(
    text: str, expected: str, numbers: list[int]
) -> None:
    assert _cited(text) == (expected, numbers)


@pytest.mark.parametrize(("text", "expected", "numbers"), [
    # out of range: dropped with the space before it, never remapped to other evidence
    ("超出部分作废 [来源 9](citation://9)。", "超出部分作废。", []),
    ("limit [Source 4](citation://4).", "limit.", []),
    # a combined target keeps only its numbers in the snapshot
    ("a [1,9](citation://1,9).", "a [1](citation://1).", [1]),
    ("a [来源 9, 2](citation://9,2) b", "a [来源 2](citation://2) b", [2]),
    ("a [1,2](citation://7,8) b", "a b", []),
])
def test_targets_outside_the_snapshot_are_dropped(
    text: str, expected: str, numbers: list[int]
) -> None:
    checked = validate_citations(text, EVIDENCE)
    assert (checked.answer, [c.n for c in checked.citations]) == (expected, numbers)
    assert len(checked.removed) == 1


def test_stored_citations_are_exactly_the_numbers_left_in_the_answer() -> None:
    text = "A [来源 2](citation://2,9). B [Source 1](citation://1)[来源 3](citation://5)."
    checked = validate_citations(text, EVIDENCE)
    assert checked.answer == "A [来源 2](citation://2). B [Source 1](citation://1)."
    assert [(c.n, c.chunk_id) for c in checked.citations] == [(2, "chunk2"), (1, "chunk1")]


def test_strip_citations_removes_labelled_and_combined_links() -> None:
    text = "A [来源 1](citation://1)[Source 2](citation://2). B [1,2](citation://1,2)"
    assert strip_citations(text) == "A . B "


def test_the_prompt_asks_for_the_label_of_the_conversations_language() -> None:
    assert "[来源 N](citation://N)" in SYSTEM_PROMPT_ZH
    assert "[Source N](citation://N)" not in SYSTEM_PROMPT_ZH
    assert "[Source N](citation://N)" in SYSTEM_PROMPT
    assert "[来源 N](citation://N)" not in SYSTEM_PROMPT
    assert "Never put two numbers in one link" in SYSTEM_PROMPT
    chinese = build_messages("年假可以结转几天？", [evidence(1, LEAVE, "leave.md")])
    english = build_messages("What is the hotel limit?", [evidence(1, HOTEL)])
    assert chinese[0].content == SYSTEM_PROMPT_ZH
    assert english[0].content == SYSTEM_PROMPT


def test_the_conversations_language_follows_the_question_then_its_history() -> None:
    assert conversation_is_chinese("年假 days") is True
    assert conversation_is_chinese("How many days?", [("年假几天？", "五天")]) is False
    assert conversation_is_chinese("2024?", [("年假几天？", "五天")]) is True
    assert conversation_is_chinese("2024?", [("How many?", "5")]) is False
    messages = build_messages("2024?", [evidence(1)], history=[("年假几天？", "五天")])
    assert messages[0].content == SYSTEM_PROMPT_ZH


def test_evidence_stored_before_stage_scores_were_kept_still_loads() -> None:
    item = evidence(1)
    old = item.model_dump(mode="json")
    for key in ("dense_score", "sparse_score", "fusion_score", "rerank_score"):
        assert old.pop(key) is None
    assert type(item).model_validate(old) == item
