"""Chat over HTTP on the real stack (e5, tantivy, SQLite) with the real local model server:
JSON and SSE turns with validated citations, extractive answers, failures, and a client that
goes away mid-answer (a real uvicorn server, so the disconnect is a real closed socket)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.api_helpers import SMALL_CHUNKS, Api, assert_error
from api.chat_helpers import (
    CHAT_MODEL,
    chat_settings,
    copy_data,
    parse_sse,
    seed,
    serving,
    wait_for,
)
from api.conftest import open_api
from ragsift.bootstrap import build
from ragsift.chat.extractive import EXTRACTIVE_NOTE_EN
from ragsift.config import Settings
from support.fixtures import LLMServer
from support.serve import free_port

QUESTION = "hotel limit per night in Tokyo?"
DELTAS = ["The hotel limit is 150 dollars [", "1](citation://1); in Tokyo 220 [1](cit",
          "ation://1)[9](citation://9)."]
VALIDATED = "The hotel limit is 150 dollars [1](citation://1); in Tokyo 220 [1](citation://1)."
EVIDENCE_KEYS = {"n", "chunk_id", "document_id", "filename", "heading_path", "locator", "text",
                 "context_text", "score", "assets", "dense_score", "sparse_score",
                 "fusion_score", "rerank_score", "kind", "question", "source", "relevance",
                 "kb_id"}
CITATION_KEYS = {"n", "chunk_id", "document_id", "filename", "locator", "heading_path", "text",
                 "kind", "question", "source", "relevance", "kb_id"}
Seeded = tuple[Path, dict[str, str]]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    data = tmp_path_factory.mktemp("chat_seed") / "data"
    return data, seed(data)


@pytest.fixture(scope="module")
def model_api(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory,
              llm_server_process: LLMServer) -> Iterator[Api]:
    data = copy_data(seeded[0], tmp_path_factory.mktemp("chat_model") / "data")
    with open_api(data, **chat_settings(llm_server_process.url)) as api:
        yield api


@pytest.fixture(scope="module")
def extractive_api(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    data = copy_data(seeded[0], tmp_path_factory.mktemp("chat_extractive") / "data")
    with open_api(data, **chat_settings(None)) as api:
        yield api


def _chat(api: Api, **body: Any) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={"kb": "docs", "message": QUESTION, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _stream(api: Api, **body: Any) -> list[tuple[str, dict[str, Any]]]:
    response = api.client.post("/api/chat/stream",
                               json={"kb": "docs", "message": QUESTION, **body})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def _turns(api: Api, conversation_id: str) -> list[dict[str, Any]]:
    response = api.client.get(f"/api/conversations/{conversation_id}")
    assert response.status_code == 200, response.text
    turns: list[dict[str, Any]] = response.json()["turns"]
    return turns


def test_json_chat_answers_from_numbered_evidence_with_validated_citations(
    model_api: Api, llm_server: LLMServer, seeded: Seeded,
) -> None:
    llm_server.control(chat={"deltas": DELTAS})
    body = _chat(model_api)

    assert set(body) == {"conversation_id", "turn_id", "answer", "citations", "evidence",
                         "trace", "extractive", "model", "assets"}
    assert body["answer"] == VALIDATED
    assert (body["extractive"], body["model"]) == (False, CHAT_MODEL)
    evidence = body["evidence"]
    assert [item["n"] for item in evidence] == list(range(1, len(evidence) + 1))
    assert all(set(item) == EVIDENCE_KEYS for item in evidence)
    top = evidence[0]
    assert (top["filename"], top["document_id"]) == ("hotels.md", seeded[1]["hotels.md"])
    [citation] = body["citations"]
    assert set(citation) == CITATION_KEYS
    assert {k: citation[k] for k in CITATION_KEYS} == {k: top[k] for k in CITATION_KEYS}
    assert all(0.0 <= item["relevance"] <= 1.0 for item in evidence)  # calibrated, per hit
    assert body["trace"]["query"] == QUESTION and body["trace"]["kb_id"] == seeded[1]["kb"]
    assert body["trace"]["returned_count"] == len(evidence)

    request = llm_server.last("chat")["body"]
    assert (request["model"], request["stream"]) == (CHAT_MODEL, True)
    prompt = request["messages"][-1]["content"]
    assert prompt.startswith("Evidence:\n\n[1] hotels.md") and prompt.endswith(
        f"Question: {QUESTION}")
    assert top["text"] in prompt or (top["context_text"] or "") in prompt


def test_sse_stream_sends_trace_deltas_citations_done_in_order(
    model_api: Api, llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"deltas": DELTAS})
    events = _stream(model_api)

    assert [name for name, _ in events] == ["trace", "delta", "delta", "delta", "citations",
                                            "done"]
    trace = events[0][1]
    assert set(trace) == {"conversation_id", "turn_id", "trace", "evidence"}
    assert trace["evidence"][0]["filename"] == "hotels.md"
    # the deltas are checked as they stream: together they are the validated answer
    assert "".join(data["text"] for name, data in events if name == "delta") == VALIDATED
    citations = events[-2][1]
    assert citations["answer"] == VALIDATED
    assert [c["n"] for c in citations["citations"]] == [1]
    assert events[-1][1] == {"conversation_id": trace["conversation_id"],
                             "turn_id": trace["turn_id"], "extractive": False}
    [stored] = _turns(model_api, trace["conversation_id"])
    assert (stored["id"], stored["answer"], stored["status"]) == (
        trace["turn_id"], VALIDATED, "complete")


def test_without_a_chat_server_the_answer_is_extractive_and_says_so(
    extractive_api: Api,
) -> None:
    body = _chat(extractive_api)
    assert (body["extractive"], body["model"]) == (True, None)
    assert body["answer"].startswith(EXTRACTIVE_NOTE_EN)
    assert "[Source 1](citation://1)" in body["answer"]
    assert body["citations"][0]["filename"] == "hotels.md"

    events = _stream(extractive_api)
    assert [name for name, _ in events] == ["trace", "delta", "citations", "done"]
    assert events[1][1]["text"] == events[2][1]["answer"]
    assert events[-1][1]["extractive"] is True


def test_a_chat_server_failing_mid_answer_is_an_error_event_and_a_failed_turn(
    model_api: Api, llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"mode": "stream_error", "deltas": ["150 [1](citation://1) ", "x"],
                             "fail_after": 1})
    events = _stream(model_api)
    assert [name for name, _ in events] == ["trace", "delta", "error"]
    error = events[-1][1]
    assert error["code"] == "chat_model_failed"
    assert "scripted mid-stream failure" in error["message"]
    [stored] = _turns(model_api, events[0][1]["conversation_id"])
    assert (stored["status"], stored["answer"]) == ("failed", "150 [1](citation://1) ")
    assert [c["n"] for c in stored["citations"]] == [1]


def test_a_chat_server_failure_is_a_502_for_json_and_the_turn_is_stored_failed(
    model_api: Api, llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"mode": "stream_cut", "answer": "The hotel limit is", "fail_after": 1})
    response = model_api.client.post("/api/chat", json={"kb": "docs", "message": QUESTION})
    body = assert_error(response, 502, "chat_model_failed")
    assert "ended before the answer was complete" in body["message"]
    newest = model_api.client.get("/api/conversations").json()[0]
    [stored] = _turns(model_api, newest["id"])
    assert (stored["status"], stored["answer"]) == ("failed", "The hote")
    assert body["message"].endswith(f"(turn {stored['id']} of conversation {newest['id']} "
                                    "is stored as failed)")


def test_every_retrieval_channel_failing_is_a_503_and_stores_nothing(
    extractive_api: Api, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> None:
        raise OSError("disk gone")

    before = extractive_api.client.get("/api/conversations").json()
    monkeypatch.setattr(extractive_api.container.index, "search_dense", broken)
    monkeypatch.setattr(extractive_api.container.index, "search_sparse", broken)
    # the chat KB mixes Chinese and English: the second dense channel is searched too
    monkeypatch.setattr(extractive_api.container.index, "search_second_dense", broken)
    for route in ("/api/chat", "/api/chat/stream"):
        response = extractive_api.client.post(route, json={"kb": "docs", "message": QUESTION})
        assert_error(response, 503, "retrieval_unavailable")
    assert extractive_api.client.get("/api/conversations").json() == before


def test_a_kb_built_with_another_embedding_model_is_a_409_and_stores_nothing(
    seeded: Seeded, tmp_path: Path,
) -> None:
    data = copy_data(seeded[0], tmp_path / "data")
    other_model = {"embedder": "openai", "openai_embedding_dim": 384,
                   "openai_base_url": f"http://127.0.0.1:{free_port()}/v1"}  # never reached
    with open_api(data, **chat_settings(None), **other_model) as api:
        for route in ("/api/chat", "/api/chat/stream"):
            response = api.client.post(route, json={"kb": "docs", "message": QUESTION})
            assert_error(response, 409, "embedding_model_mismatch")
        assert api.client.get("/api/conversations").json() == []
        assert _chat(api, mode="sparse")["evidence"]


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"kb": "nope", "message": "hotel"}, 404, "not_found"),
    ({"kb_id": "nope", "message": "hotel"}, 404, "not_found"),
    ({"kb": "docs", "message": "hotel", "conversation_id": "nope"}, 404, "not_found"),
    ({"kb": "docs", "kb_id": "x", "message": "hotel"}, 422, "invalid_request"),
    ({"kb": "docs"}, 422, "invalid_request"),
    ({"kb": "docs", "message": "hotel", "top_k": 21}, 422, "invalid_request"),
    ({"kb": "docs", "message": "hotel", "mode": "magic"}, 422, "invalid_request"),
    ({"kb": "docs", "message": "hotel", "extra": 1}, 422, "invalid_request"),
    ({"kb": "docs", "message": "   "}, 400, "invalid_input"),
    ({"kb": "docs", "message": "x" * 1001}, 400, "invalid_input"),
    ({"kb": "docs", "message": "hotel", "document_ids": [f"d{i}" for i in range(51)]},
     400, "invalid_input"),
])
def test_bad_chat_requests_get_a_stable_error_code(
    extractive_api: Api, body: dict[str, Any], status: int, code: str,
) -> None:
    for route in ("/api/chat", "/api/chat/stream"):
        assert_error(extractive_api.client.post(route, json=body), status, code)


@pytest.fixture(scope="module")
def served(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory,
           llm_server_process: LLMServer) -> Iterator[str]:
    """The chat app (with the model server) under a real uvicorn server: its base URL."""
    data = copy_data(seeded[0], tmp_path_factory.mktemp("chat_served") / "data")
    container = build(Settings(data_dir=data, **SMALL_CHUNKS,
                               **chat_settings(llm_server_process.url)))
    try:
        with serving(container) as url:
            yield url
    finally:
        container.close()


def _read_until_first_delta(lines: Iterator[str]) -> dict[str, Any]:
    """Consume the stream up to its first delta; the trace event's data."""
    trace: dict[str, Any] = {}
    event = ""
    for line in lines:
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: ") and event == "trace":
            trace = json.loads(line[len("data: "):])
        elif line.startswith("data: ") and event == "delta":
            return trace
    raise AssertionError("the stream ended before its first delta")


def test_the_client_going_away_closes_the_model_stream_and_cancels_the_turn(
    served: str, llm_server: LLMServer,
) -> None:
    # 200 pieces, 50 ms apart: 10 s if nobody stopped it
    llm_server.control(chat={"answer": "x" * 800, "chunk_chars": 4, "delay_s": 0.05})
    with httpx.Client(base_url=served, timeout=10) as client:
        with client.stream("POST", "/api/chat/stream",
                           json={"kb": "docs", "message": QUESTION}) as response:
            assert response.status_code == 200
            trace = _read_until_first_delta(response.iter_lines())
        # the SSE connection is closed here, after one delta

        record = wait_for(lambda: (r := llm_server.last("stream"))["outcome"] != "streaming"
                          and r, what="the model stream to end")
        assert record["outcome"] == "client_closed"
        assert record["sent"] < 100  # cut early, not after the 200 pieces of the whole answer

        def turn_status() -> str | None:
            turns = client.get(f"/api/conversations/{trace['conversation_id']}").json()["turns"]
            status: str = turns[0]["status"]
            return None if status == "generating" else status

        assert wait_for(turn_status, what="the turn to end") == "cancelled"


def test_a_conversation_is_busy_while_its_turn_generates(
    served: str, llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"answer": "y" * 800, "chunk_chars": 4, "delay_s": 0.05})
    with httpx.Client(base_url=served, timeout=10) as client:
        with client.stream("POST", "/api/chat/stream",
                           json={"kb": "docs", "message": QUESTION}) as response:
            # keep the line iterator: dropping it would close the connection
            lines = response.iter_lines()
            trace = _read_until_first_delta(lines)
            conversation_id = trace["conversation_id"]

            assert_error(client.delete(f"/api/conversations/{conversation_id}"),
                         409, "conversation_busy")
            again = client.post("/api/chat", json={"kb": "docs", "message": "and London?",
                                                   "conversation_id": conversation_id})
            assert_error(again, 409, "conversation_busy")
            [listed] = [c for c in client.get("/api/conversations").json()
                        if c["id"] == conversation_id]
            assert (listed["generating"], listed["turn_count"]) == (True, 1)
            assert next(lines) == ""  # still streaming

        wait_for(lambda: not client.get(f"/api/conversations/{conversation_id}").json()[
            "generating"], what="the turn to stop generating")
        assert client.delete(f"/api/conversations/{conversation_id}").status_code == 204
        assert client.get(f"/api/conversations/{conversation_id}").status_code == 404
