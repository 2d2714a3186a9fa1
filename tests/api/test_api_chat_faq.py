"""FAQ standard answers in chat, over HTTP on the real stack (e5, the real local model server,
API keys with scopes): a question with a standard answer is answered with it, cited as the FAQ
entry, without the model, in the asker's scope only; below the threshold a close entry joins
the evidence the model sees; the OpenAI-compatible and Dify routes follow the same plan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from api.api_helpers import Api
from api.auth_helpers import as_key, new_key
from api.chat_helpers import chat_settings, parse_sse, seed
from api.conftest import open_api
from ragsift.auth.keys import Role
from support.fixtures import LLMServer

ROUTER_Q = "How do I reset the router?"
ROUTER_A = "Hold the reset button for 10 s."
EXPENSES_Q = "报销单每个月几号之前提交？"
EXPENSES_A = "每月 25 日前提交上月的报销单。"
FAQ = "\n".join(json.dumps(row, ensure_ascii=False) for row in [
    {"question": ROUTER_Q, "answer": ROUTER_A, "source": "Support wiki"},
    {"question": EXPENSES_Q, "answer": EXPENSES_A, "source": "财务部", "tenant_id": "acme"},
]).encode()


@dataclass
class Keys:
    admin: str
    acme: str  # a reader of tenant acme
    globex: str  # a reader of tenant globex


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer,
) -> Iterator[tuple[Api, Keys]]:
    data = tmp_path_factory.mktemp("chat_faq") / "data"
    kb_id = seed(data)["kb"]
    with open_api(data, auth=True, **chat_settings(llm_server_process.url)) as api:
        keys = Keys(new_key(api, "admin", Role.ADMIN), new_key(api, "acme", tenant_ids=("acme",)),
                    new_key(api, "globex", tenant_ids=("globex",)))
        imported = as_key(api, keys.admin, "POST", f"/api/kbs/{kb_id}/faq",
                          files={"file": ("faq.jsonl", FAQ)})
        assert imported.status_code == 200, imported.text
        yield api, keys


def _chat(served: tuple[Api, Keys], message: str, key: str = "", **body: Any) -> dict[str, Any]:
    api, keys = served
    response = as_key(api, key or keys.admin, "POST", "/api/chat",
                      json={"kb": "docs", "message": message, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_question_with_a_standard_answer_gets_it_cited_as_the_faq_entry_without_the_model(
    served: tuple[Api, Keys], llm_server: LLMServer,
) -> None:
    body = _chat(served, ROUTER_Q)

    assert body["answer"] == f"{ROUTER_A} [Source 1](citation://1)"
    [cited] = body["citations"]
    assert (cited["kind"], cited["question"], cited["text"], cited["source"]) == (
        "faq", ROUTER_Q, ROUTER_A, "Support wiki")
    assert [item["kind"] for item in body["evidence"]] == ["faq"]
    route = body["trace"]["route"]
    assert (route["route"], route["decided_by"]) == ("faq_direct", "faq")
    assert body["trace"]["faq"]["detail"]["direct_answer"] == 1
    assert (body["model"], body["extractive"]) == (None, False)
    assert "chat" not in llm_server.last_kinds()
    api, keys = served
    [stored] = as_key(api, keys.admin, "GET",
                      f"/api/conversations/{body['conversation_id']}").json()["turns"]
    assert (stored["answer"], stored["citations"]) == (body["answer"], body["citations"])


def test_the_streamed_standard_answer_is_one_delta_with_its_faq_citation(
    served: tuple[Api, Keys],
) -> None:
    api, keys = served
    response = as_key(api, keys.admin, "POST", "/api/chat/stream",
                      json={"kb": "docs", "message": ROUTER_Q})
    events = parse_sse(response.text)

    assert [name for name, _ in events] == ["trace", "delta", "citations", "done"]
    assert events[0][1]["trace"]["route"]["route"] == "faq_direct"
    assert events[1][1]["text"] == f"{ROUTER_A} [Source 1](citation://1)"
    assert [c["kind"] for c in events[2][1]["citations"]] == ["faq"]


def test_a_tenants_standard_answer_answers_its_own_readers_only(
    served: tuple[Api, Keys], llm_server: LLMServer,
) -> None:
    _, keys = served
    own = _chat(served, EXPENSES_Q, keys.acme)
    llm_server.control(chat={"deltas": ["知识库中没有相关证据。"]})
    other = _chat(served, EXPENSES_Q, keys.globex)

    assert own["answer"] == f"{EXPENSES_A} [来源 1](citation://1)"
    assert other["trace"]["route"]["route"] == "search"
    assert all(item["kind"] == "chunk" for item in other["evidence"])
    assert EXPENSES_A not in json.dumps(other, ensure_ascii=False)


def test_below_the_direct_answer_a_close_entry_joins_the_evidence_the_model_reads(
    served: tuple[Api, Keys], llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"deltas": [f"{ROUTER_A} [1](citation://1)"]})
    # a forced search asks for the evidence: the entry is evidence, not the answer
    body = _chat(served, ROUTER_Q, route="search")

    assert body["trace"]["route"]["route"] == "search" and body["model"] is not None
    assert [item["kind"] for item in body["evidence"]][:1] == ["faq"]
    assert {item["kind"] for item in body["evidence"][1:]} == {"chunk"}
    prompt = llm_server.last("chat")["body"]["messages"][-1]["content"]
    assert f"[1] FAQ › {ROUTER_Q}\n{ROUTER_A}" in prompt
    assert [c["kind"] for c in body["citations"]] == ["faq"]


def test_an_unrelated_question_gets_no_faq_evidence(
    served: tuple[Api, Keys], llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"deltas": ["150 dollars [1](citation://1)."]})
    body = _chat(served, "hotel limit per night?")

    assert body["evidence"] and {item["kind"] for item in body["evidence"]} == {"chunk"}
    assert body["trace"]["faq"]["status"] == "applied"


def test_the_openai_compatible_route_answers_with_the_standard_answer(
    served: tuple[Api, Keys], llm_server: LLMServer,
) -> None:
    api, keys = served
    response = as_key(api, keys.admin, "POST", "/v1/chat/completions", json={
        "model": "kb:docs", "messages": [{"role": "user", "content": ROUTER_Q}]})

    assert response.status_code == 200, response.text
    completion = response.json()
    assert completion["choices"][0]["message"]["content"].startswith(ROUTER_A)
    assert [c["kind"] for c in completion["ragsift"]["citations"]] == ["faq"]
    assert "chat" not in llm_server.last_kinds()


def test_dify_retrieval_returns_the_standard_answer_alone_in_the_keys_scope(
    served: tuple[Api, Keys],
) -> None:
    api, keys = served

    def records(key: str, query: str) -> list[dict[str, Any]]:
        response = as_key(api, key, "POST", "/dify/retrieval", json={
            "knowledge_id": "docs", "query": query,
            "retrieval_setting": {"top_k": 5, "score_threshold": 0.0}})
        assert response.status_code == 200, response.text
        found: list[dict[str, Any]] = response.json()["records"]
        return found

    [direct] = records(keys.admin, ROUTER_Q)
    assert (direct["content"], direct["title"], direct["metadata"]["kind"]) == (
        ROUTER_A, ROUTER_Q, "faq")
    assert direct["metadata"]["direct_answer"] is True
    assert [r["content"] for r in records(keys.acme, EXPENSES_Q)] == [EXPENSES_A]
    assert all(r["metadata"].get("kind") != "faq" for r in records(keys.globex, EXPENSES_Q))
