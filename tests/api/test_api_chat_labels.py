"""Chat over HTTP with the specification's citation labels: `[来源 N]` asked of the model for a
Chinese question, combined targets split, out-of-range ones dropped, the stored citations what
the answer cites; the evidence keeps every stage's score; the chat options reach retrieval."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.api_helpers import Api
from api.chat_helpers import chat_settings, copy_data, seed
from api.conftest import open_api
from support.fixtures import LLMServer

Seeded = tuple[Path, dict[str, str]]
ZH_QUESTION = "酒店每晚的住宿上限是多少？hotel limit per night"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    data = tmp_path_factory.mktemp("chat_labels_seed") / "data"
    return data, seed(data)


@pytest.fixture(scope="module")
def model_api(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory,
              llm_server_process: LLMServer) -> Iterator[Api]:
    data = copy_data(seeded[0], tmp_path_factory.mktemp("chat_labels") / "data")
    with open_api(data, **chat_settings(llm_server_process.url)) as api:
        yield api


def _chat(api: Api, message: str, **body: Any) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={"kb": "docs", "message": message, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_labelled_and_combined_citations_are_validated_and_stored_as_cited(
    model_api: Api, llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"content": "上限为 150 美元[来源 1](citation://1,2)；"
                                        "东京更高[来源 9](citation://9)。"})
    body = _chat(model_api, ZH_QUESTION)

    assert body["answer"] == "上限为 150 美元[来源 1](citation://1)[来源 2](citation://2)；东京更高。"
    assert [c["n"] for c in body["citations"]] == [1, 2]
    system = llm_server.last("chat")["body"]["messages"][0]["content"]
    assert "[来源 N](citation://N)" in system and "[Source N]" not in system
    [stored] = model_api.client.get(f"/api/conversations/{body['conversation_id']}").json()["turns"]
    assert stored["answer"] == body["answer"]
    assert [c["n"] for c in stored["citations"]] == [1, 2]


def test_an_english_question_asks_for_source_labels(
    model_api: Api, llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"content": "It is 150 dollars [Source 1](citation://1)."})
    body = _chat(model_api, "What is the hotel limit per night?")

    assert body["answer"] == "It is 150 dollars [Source 1](citation://1)."
    assert [c["n"] for c in body["citations"]] == [1]
    system = llm_server.last("chat")["body"]["messages"][0]["content"]
    assert "[Source N](citation://N)" in system and "[来源 N]" not in system


def test_evidence_keeps_each_stage_score_and_the_options_reach_retrieval(
    model_api: Api, llm_server: LLMServer, seeded: Seeded,
) -> None:
    llm_server.control(chat={"content": "150 [1](citation://1)."})
    hotels = seeded[1]["hotels.md"]
    body = _chat(model_api, "hotel limit per night", rerank=False, small2big=False,
                 document_ids=[hotels])

    evidence = body["evidence"]
    assert evidence and {item["document_id"] for item in evidence} == {hotels}
    for item in evidence:
        assert item["rerank_score"] is None
        assert item["fusion_score"] == item["score"]
        assert item["dense_score"] is not None or item["sparse_score"] is not None
    trace = body["trace"]
    assert trace["switches_requested"]["rerank"] is False
    assert trace["switches_requested"]["small2big"] is False
    assert trace["scope"]["document_ids_requested"] == 1
    stored = model_api.client.get(f"/api/conversations/{body['conversation_id']}").json()
    assert stored["turns"][0]["evidence"] == evidence
