"""Chat turns the plan routes away from the search, over HTTP on the real stack with the real
local model server: a greeting, thanks or a request for a person gets a short reply with no
search, no evidence, no citations and no model call; a real question is answered as before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.api_helpers import Api
from api.chat_helpers import chat_settings, parse_sse, seed
from api.conftest import open_api
from ragsift.chat.replies import DEFAULT_REPLIES
from support.fixtures import LLMServer

CUSTOM_HANDOFF = "请拨打 400-000-0000 联系人工客服。"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer) -> Iterator[Api]:
    data = tmp_path_factory.mktemp("route") / "data"
    seed(data)
    settings = chat_settings(llm_server_process.url,
                             chat_route_replies={"handoff.zh": CUSTOM_HANDOFF},
                             kb_domains={"docs": "员工手册、假期、报销 handbook, leave, expenses"})
    with open_api(data, **settings) as app:
        yield app


def _chat(api: Api, message: str, **body: Any) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={"kb": "docs", "message": message, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_greeting_gets_the_greeting_reply_without_search_evidence_or_model(
    api: Api, llm_server: LLMServer,
) -> None:
    body = _chat(api, "你好")

    assert body["answer"] == DEFAULT_REPLIES["greeting.zh"]
    assert (body["citations"], body["evidence"], body["model"]) == ([], [], None)
    assert body["trace"]["route"]["route"] == "chitchat"
    assert body["trace"]["channels"] == []
    assert "chat" not in llm_server.last_kinds()


def test_thanks_in_english_gets_the_english_thanks_reply(api: Api) -> None:
    assert _chat(api, "Thanks a lot!")["answer"] == DEFAULT_REPLIES["thanks.en"]


def test_a_request_for_a_person_gets_the_configured_handoff_reply(api: Api) -> None:
    body = _chat(api, "帮我转人工")

    assert body["answer"] == CUSTOM_HANDOFF
    assert body["trace"]["route"]["route"] == "handoff" and body["citations"] == []


def test_a_question_outside_the_kbs_declared_domain_gets_the_out_of_scope_reply(
    api: Api, llm_server: LLMServer,
) -> None:
    body = _chat(api, "今天天气怎么样？")

    assert body["answer"] == DEFAULT_REPLIES["out_of_scope.zh"]
    assert (body["citations"], body["evidence"], body["model"]) == ([], [], None)
    assert body["trace"]["route"]["route"] == "out_of_scope"
    assert "chat" not in llm_server.last_kinds()


def test_the_streamed_greeting_is_one_delta_and_no_citations(api: Api) -> None:
    response = api.client.post("/api/chat/stream", json={"kb": "docs", "message": "hello"})
    events = parse_sse(response.text)

    assert [name for name, _ in events] == ["trace", "delta", "citations", "done"]
    assert events[1][1]["text"] == DEFAULT_REPLIES["greeting.en"]
    assert events[2][1]["citations"] == [] and events[0][1]["evidence"] == []


def test_a_greeting_and_its_reply_are_kept_in_the_conversation(api: Api) -> None:
    body = _chat(api, "早上好")
    turns = api.client.get(f"/api/conversations/{body['conversation_id']}").json()["turns"]

    assert [(t["question"], t["answer"], t["status"]) for t in turns] == [
        ("早上好", DEFAULT_REPLIES["greeting.zh"], "complete")]


def test_a_question_after_a_greeting_is_searched_and_answered_from_evidence(
    api: Api, llm_server: LLMServer,
) -> None:
    first = _chat(api, "hi")
    llm_server.control(chat={"deltas": ["150 dollars [1](citation://1)."]})
    body = _chat(api, "hotel limit per night?", conversation_id=first["conversation_id"])

    assert body["trace"]["route"]["route"] == "search"
    assert body["evidence"] and body["citations"]


def test_the_caller_can_force_the_search_of_a_greeting(api: Api) -> None:
    body = _chat(api, "hello", route="search")

    assert body["trace"]["route"]["decided_by"] == "request"
    assert body["trace"]["channels"] != []


def test_an_unknown_route_is_a_400_that_names_the_field(api: Api) -> None:
    response = api.client.post("/api/chat", json={"kb": "docs", "message": "hi",
                                                  "route": "smalltalk"})
    assert response.status_code in (400, 422) and "route" in response.text
