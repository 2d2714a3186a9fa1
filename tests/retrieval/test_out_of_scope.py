"""The out_of_scope route of a KB that declares its domain: the rules on a labelled set over the
samples' vocabulary, and the plan on the real stack with the model server for unsure messages."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragsift.adapters.embedded_index.analyzer import analyze
from ragsift.bootstrap import Container
from ragsift.chat.replies import route_reply
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.trace import RouteTrace
from ragsift.ingestion.parsers import parse_document
from ragsift.retrieval.out_of_scope import Domain, check_scope, known_words
from ragsift.retrieval.route import classify
from retrieval.real_stack import QUIET, ServiceFactory, search
from support.fixtures import LLMServer

DATA = Path(__file__).with_name("data")
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
# the samples' KB as its owner would declare it (written before the measurement, not fitted)
SAMPLES_DOMAIN = (
    "星河科技的员工手册与公司制度：入职、试用期、考勤、假期、报销、差旅、薪酬、福利、离职；"
    "IT 与网络：Wi-Fi、VPN、路由器、固件、信息安全；产品手册与发布说明。"
    "Company handbook and policies: "
    "onboarding, probation, attendance, leave, expenses, travel, hotels, salary, benefits, "
    "security, IT support, network, router, firmware, product manual, release notes."
)
STACK_DOMAIN = "Travel policy, hotels, meals, expenses, 报销, 差旅, 年假, firmware release notes"


@pytest.fixture(scope="module")
def samples_vocabulary() -> set[str]:
    """The BM25 terms of the samples but the PDFs and the image (slow to parse; fewer known
    words only make the check stricter)."""
    terms: set[str] = set()
    for path in sorted(SAMPLES.iterdir()):
        if path.suffix in (".png", ".pdf"):
            continue
        for section in parse_document(path.name, path.read_bytes()).sections:
            terms.update(analyze(section.text))
    return terms


def _labelled() -> list[tuple[str, str]]:
    rows = [json.loads(line) for name in ("routes.jsonl", "out_of_scope.jsonl")
            for line in (DATA / name).read_text("utf-8").splitlines() if line]
    return [(row["message"], row["route"]) for row in rows]


def test_out_of_scope_drops_no_real_question_and_keeps_non_search_routes_precise(
    samples_vocabulary: set[str],
) -> None:
    domain = Domain.of(SAMPLES_DOMAIN)

    def known(words: Sequence[str]) -> set[str]:
        return known_words(words, analyze,
                           lambda terms: {t: int(t in samples_vocabulary) for t in terms})

    def route(message: str) -> str:
        ruled = classify(message).route
        if ruled != "search":
            return ruled
        return "out_of_scope" if check_scope(message, domain, known).verdict == (
            "out_of_scope") else "search"

    labelled = _labelled()
    assert sum(1 for _, gold in labelled if gold == "out_of_scope") >= 40
    predicted = [(gold, route(message)) for message, gold in labelled]
    dropped = [m for (m, gold), (_, got) in zip(labelled, predicted, strict=True)
               if gold == "search" and got != "search"]
    assert dropped == []
    away = [gold == got for gold, got in predicted if got != "search"]
    assert sum(away) / len(away) >= 0.98
    found = sum(1 for gold, got in predicted if gold == got == "out_of_scope")
    assert found / sum(1 for gold, _ in predicted if gold == "out_of_scope") >= 0.8


def test_a_word_of_the_domain_keeps_an_everyday_word_in_scope() -> None:
    domain = Domain.of("公司差旅与天气预警制度 travel policy, hotel bookings")
    assert check_scope("出差遇到天气预警怎么办", domain, lambda words: set()).verdict == "in_scope"
    assert check_scope("hotels in the rain", domain, lambda words: set()).verdict == "in_scope"


def test_without_the_index_vocabulary_an_everyday_word_is_unsure_not_out_of_scope() -> None:
    domain = Domain.of("HR handbook")
    assert check_scope("今天天气怎么样？", domain, lambda words: None).verdict == "unsure"
    assert check_scope("今天天气怎么样？", domain, lambda words: set()).verdict == "out_of_scope"


def test_the_out_of_scope_reply_has_a_default_per_language_and_an_override() -> None:
    route = RouteTrace(route="out_of_scope", decided_by="rules", language="zh")
    assert "知识库" in route_reply(route, {})
    assert route_reply(route, {"out_of_scope.zh": "不在范围内"}) == "不在范围内"


# --- the plan on the real stack --------------------------------------------------------------


def test_an_everyday_question_to_a_kb_with_a_domain_is_not_searched(
    kb: KnowledgeBase, service_with: ServiceFactory, llm_server: LLMServer
) -> None:
    service = service_with(kb_domains={"policies": STACK_DOMAIN})
    result = search(service, kb, "今天天气怎么样？", **QUIET)
    route = result.trace.route
    assert (route.route, route.decided_by) == ("out_of_scope", "rules")
    assert "天气" in (route.reason or "")
    assert result.hits == () and result.faq_hits == ()
    # forced, the search runs; without a declared domain, it is a search as before
    forced = search(service, kb, "今天天气怎么样？", route="search", **QUIET)
    assert forced.trace.route.route == "search" and forced.hits
    plain = search(service_with(), kb, "今天天气怎么样？", **QUIET)
    assert plain.trace.route.route == "search"
    in_scope = search(service, kb, "hotel limit per night", **QUIET)
    assert in_scope.trace.route.route == "search" and in_scope.hits


UNSURE = "Who painted the Mona Lisa?"


def test_the_model_classifies_a_message_the_rules_are_unsure_of(
    kb: KnowledgeBase, service_with: ServiceFactory, llm_server: LLMServer
) -> None:
    llm_server.control(chat={"mode": "ok", "scopes": {UNSURE: False}})
    result = search(service_with(kb_domains={"policies": STACK_DOMAIN}), kb, UNSURE,
                    **QUIET)
    route = result.trace.route
    assert (route.route, route.decided_by) == ("out_of_scope", "llm")
    assert result.hits == ()
    sent = llm_server.last("chat")["body"]["messages"]
    assert "Knowledge base domain: " + STACK_DOMAIN in sent[-1]["content"]


@pytest.mark.parametrize("script", [{"mode": "invalid_json"},
                                    {"mode": "stall", "stall_s": 2}])
def test_a_failed_classification_degrades_to_the_rules_search(
    kb: KnowledgeBase, service_with: ServiceFactory, llm_server: LLMServer,
    script: dict[str, object],
) -> None:
    llm_server.control(chat=script)
    service = service_with(kb_domains={"policies": STACK_DOMAIN}, llm_timeout_s=0.5)
    result = search(service, kb, UNSURE, **QUIET)
    assert (result.trace.route.route, result.trace.route.decided_by) == ("search", "rules")
    assert [d.code for d in result.trace.degradations] == ["route_classification_failed"]
    assert result.hits


def test_the_container_is_unchanged_by_a_domain_of_another_kb(
    stack: Container, kb: KnowledgeBase, service_with: ServiceFactory
) -> None:
    result = search(service_with(kb_domains={"other-kb": "HR"}), kb, "今天天气怎么样？", **QUIET)
    assert result.trace.route.route == "search"


def test_an_index_without_bm25_vocabulary_keeps_everyday_questions_searched() -> None:
    """An index without term statistics (the Milvus one): the rules cannot tell, so they
    search."""
    from ragsift.retrieval.scope_judge import ScopeJudge

    judge = ScopeJudge({"kb": "HR handbook"}, object(), None, 1.0)
    rules = RouteTrace(route="search", decided_by="rules", reason="a question")
    route, degradations = asyncio.run(judge.judge("id", "kb", rules, "今天天气怎么样？"))
    assert (route.route, degradations) == ("search", ())
    assert "cannot tell" in (route.reason or "")
