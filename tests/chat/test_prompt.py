"""The chat prompt: rules, history without stale citation links, numbered evidence, question."""

from __future__ import annotations

from chat.chat_factories import LEAVE, evidence, hit
from ragsift.chat.evidence import describe_locator, evidence_from_hits
from ragsift.chat.prompt import SYSTEM_PROMPT, build_messages, is_chinese, render_evidence
from ragsift.domain.chat import ChatMessage
from ragsift.domain.models import Locator


def test_messages_are_rules_history_then_numbered_evidence_and_the_question() -> None:
    first = evidence(1)
    second = evidence(2, LEAVE, "leave.md").model_copy(
        update={"heading_path": (), "locator": None, "context_text": "上文。" + LEAVE}
    )
    messages = build_messages(
        "How many days?", [first, second],
        history=[("hotel limit?", "It is 150 [1](citation://1)[2](citation://2). ")],
    )
    assert messages == (
        ChatMessage(role="system", content=SYSTEM_PROMPT),
        ChatMessage(role="user", content="hotel limit?"),
        ChatMessage(role="assistant", content="It is 150 ."),
        ChatMessage(role="user", content=(
            "Evidence:\n\n"
            f"[1] hotels.md › Travel policy › Hotels (page 1)\n{first.text}\n\n"
            f"[2] leave.md\n上文。{LEAVE}\n\n"
            "Question: How many days?"
        )),
    )


def test_system_prompt_names_the_citation_form_and_the_refusal_rule() -> None:
    assert "[Source N](citation://N)" in SYSTEM_PROMPT
    assert "does not answer the question" in SYSTEM_PROMPT
    assert "answer in English" in SYSTEM_PROMPT


def test_locators_are_described_for_the_model() -> None:
    assert describe_locator(Locator(sheet="Q1", cell_range="A1:C9")) == "sheet Q1 A1:C9"
    assert describe_locator(Locator(slide=4)) == "slide 4"
    assert describe_locator(None) == ""
    header = render_evidence(evidence(3)).splitlines()[0]
    assert header == "[3] hotels.md › Travel policy › Hotels (page 3)"


def test_evidence_is_numbered_in_rank_order_with_the_rerank_score_when_present() -> None:
    hits = [hit(1, "a", page=None), hit(2, "b").model_copy(update={"rerank_score": 0.75,
                                                                  "context_text": "a b c"})]
    first, second = evidence_from_hits(hits)
    assert (first.n, first.chunk_id, first.locator, first.score) == (1, "chunk1", None, 0.016393)
    assert (second.n, second.locator, second.score, second.context_text) == (
        2, Locator(page=1), 0.75, "a b c")


def test_chinese_detection() -> None:
    assert is_chinese("年假 days") and not is_chinese("days off")
