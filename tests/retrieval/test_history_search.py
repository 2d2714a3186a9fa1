"""History-aware search on the real stack (e5, tantivy, SQLite) with the real local model
server: a follow-up is searched with its conversation - the contextual variant without a
rewriter, the standalone question with one, the contextual variant again when it fails."""

from __future__ import annotations

from typing import Any

from ragsift.domain.models import KnowledgeBase
from retrieval.real_stack import QUIET, ServiceFactory, search
from support.fixtures import LLMServer

EARLIER = [{"role": "user", "content": "年假可以结转几天？"},
           {"role": "assistant", "content": "最多可结转五天 [1](citation://1)。"}]
FOLLOW_UP = "需要提前多久申请？"


def _quiet(**fields: Any) -> dict[str, Any]:
    return {**QUIET, **fields}


def test_without_a_rewriter_a_follow_up_adds_the_earlier_questions_terms(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, FOLLOW_UP, **_quiet(history=EARLIER))

    assert [v.method for v in result.trace.variants] == ["original", "contextual"]
    assert result.trace.variants[1].text == f"{FOLLOW_UP} 年假 结转"
    assert {c.list_name for c in result.trace.channels} >= {"dense:context", "sparse:context"}
    history = result.trace.history
    assert (history.status, history.detail["variant"]) == ("applied", "contextual")
    assert "提前一周" in result.hits[0].text


def test_a_message_that_stands_alone_is_searched_as_it_is(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, "差旅费用的报销期限是多少天", **_quiet(history=EARLIER))

    assert [v.method for v in result.trace.variants] == ["original"]
    assert result.trace.history.status == "skipped"


def test_without_history_the_stage_is_off(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(), kb, FOLLOW_UP, **QUIET)
    assert result.trace.history.status == "off"


def test_with_a_rewriter_the_follow_up_is_written_as_a_standalone_question(
    service_with: ServiceFactory, kb: KnowledgeBase, llm_server: LLMServer,
) -> None:
    answer = '{"method": "standalone", "text": "年假需要提前多久申请？"}'
    llm_server.control(chat={"content": answer})
    result = search(service_with(), kb, FOLLOW_UP, **_quiet(history=EARLIER, rewrite=True))

    assert [(v.method, v.text) for v in result.trace.variants] == [
        ("original", FOLLOW_UP), ("contextual", f"{FOLLOW_UP} 年假 结转"),
        ("standalone", "年假需要提前多久申请？")]
    assert result.trace.history.detail["variant"] == "standalone+contextual"
    prompt = llm_server.last("chat")["body"]["messages"][-1]["content"]
    assert "user: 年假可以结转几天？" in prompt and prompt.endswith(
        f"Follow-up question: {FOLLOW_UP}")
    assert "提前一周" in result.hits[0].text


def test_a_failing_rewriter_falls_back_to_the_contextual_variant_and_says_so(
    service_with: ServiceFactory, kb: KnowledgeBase, llm_server: LLMServer,
) -> None:
    llm_server.control(faults={"chat": {"status": 500}})
    service = service_with(llm_timeout_s=2.0)
    result = search(service, kb, FOLLOW_UP, **_quiet(history=EARLIER, rewrite=True))

    assert [v.method for v in result.trace.variants] == ["original", "contextual"]
    assert result.trace.history.reason == "the standalone rewrite failed"
    assert "rewrite_failed" in [d.code for d in result.trace.degradations]
    assert "提前一周" in result.hits[0].text


def test_history_awareness_can_be_switched_off(
    service_with: ServiceFactory, kb: KnowledgeBase,
) -> None:
    result = search(service_with(history_aware=False), kb, FOLLOW_UP, **_quiet(history=EARLIER))
    assert [v.method for v in result.trace.variants] == ["original"]
