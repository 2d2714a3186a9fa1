"""Conversations over HTTP: created by their first message, listed newest first, restored
exactly as answered without searching again, deleted (404 after), gone with their KB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.api_helpers import Api, assert_error
from api.chat_helpers import chat_settings, copy_data, seed
from api.conftest import open_api

TURN_KEYS = {"id", "question", "answer", "citations", "assets", "evidence", "trace",
             "extractive", "created_at", "status", "version_of", "version", "superseded",
             "feedback"}
SUMMARY_KEYS = {"id", "title", "kb_id", "created_at", "updated_at", "generating", "turn_count"}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    data = tmp_path_factory.mktemp("conversations_seed") / "data"
    return data, seed(data)


@pytest.fixture
def api(seeded: tuple[Path, dict[str, str]], tmp_path: Path) -> Iterator[Api]:
    """A fresh extractive chat app over a private copy of the seeded KB "docs"."""
    with open_api(copy_data(seeded[0], tmp_path / "data"), **chat_settings(None)) as app:
        yield app


def _chat(api: Api, message: str, conversation_id: str | None = None) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={
        "kb": "docs", "message": message, "conversation_id": conversation_id,
    })
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _listed(api: Api) -> list[dict[str, Any]]:
    response = api.client.get("/api/conversations")
    assert response.status_code == 200, response.text
    conversations: list[dict[str, Any]] = response.json()
    return conversations


def test_the_first_message_creates_the_conversation_titled_by_it(
    api: Api, seeded: tuple[Path, dict[str, str]],
) -> None:
    assert _listed(api) == []  # a draft exists only client-side
    message = "How much is the hotel limit per night\nin London and Tokyo, and what about invoices?"
    body = _chat(api, message)

    [conversation] = _listed(api)
    assert set(conversation) == SUMMARY_KEYS
    assert conversation["id"] == body["conversation_id"]
    assert conversation["title"] == "How much is the hotel limit per night in London and Tokyo, a"
    assert len(conversation["title"]) == 60
    assert (conversation["kb_id"], conversation["generating"], conversation["turn_count"]) == (
        seeded[1]["kb"], False, 1)


def test_get_restores_every_turn_exactly_without_searching_again(
    api: Api, monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _chat(api, "hotel limit per night?")
    second = _chat(api, "年假可以结转几天？", first["conversation_id"])
    assert second["conversation_id"] == first["conversation_id"]

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("GET of a conversation must not search")

    monkeypatch.setattr(api.container.retrieval, "search", no_search)
    monkeypatch.setattr(api.container.index, "search_dense", no_search)
    monkeypatch.setattr(api.container.index, "search_sparse", no_search)
    response = api.client.get(f"/api/conversations/{first['conversation_id']}")
    assert response.status_code == 200, response.text
    conversation = response.json()

    assert set(conversation) == SUMMARY_KEYS - {"turn_count"} | {"turns"}
    assert conversation["generating"] is False
    turns = conversation["turns"]
    assert all(set(turn) == TURN_KEYS for turn in turns)
    for turn, answered, question in ((turns[0], first, "hotel limit per night?"),
                                     (turns[1], second, "年假可以结转几天？")):
        assert turn["id"] == answered["turn_id"] and turn["question"] == question
        assert turn["status"] == "complete"
        for key in ("answer", "citations", "evidence", "trace", "extractive"):
            assert turn[key] == answered[key], key
    assert turns[1]["evidence"][0]["filename"] == "leave.md"


def test_list_is_newest_first_and_a_new_turn_moves_a_conversation_up(api: Api) -> None:
    older = _chat(api, "hotel limit?")["conversation_id"]
    newer = _chat(api, "error E-104?")["conversation_id"]
    assert [c["id"] for c in _listed(api)] == [newer, older]

    _chat(api, "and in Tokyo?", older)
    listed = _listed(api)
    assert [(c["id"], c["turn_count"]) for c in listed] == [(older, 2), (newer, 1)]
    assert listed[0]["updated_at"] > listed[0]["created_at"]


def test_delete_removes_the_conversation_and_unknown_ids_are_404(api: Api) -> None:
    kept = _chat(api, "hotel limit?")["conversation_id"]
    gone = _chat(api, "error E-104?")["conversation_id"]

    response = api.client.delete(f"/api/conversations/{gone}")
    assert response.status_code == 204 and response.content == b""
    assert [c["id"] for c in _listed(api)] == [kept]
    assert_error(api.client.get(f"/api/conversations/{gone}"), 404, "not_found")
    assert_error(api.client.delete(f"/api/conversations/{gone}"), 404, "not_found")
    follow_up = api.client.post("/api/chat", json={"kb": "docs", "message": "hotel?",
                                                   "conversation_id": gone})
    assert_error(follow_up, 404, "not_found")


def test_a_follow_up_must_use_the_conversations_knowledge_base(api: Api) -> None:
    conversation_id = _chat(api, "hotel limit?")["conversation_id"]
    api.create_kb("other")
    response = api.client.post("/api/chat", json={"kb": "other", "message": "hotel?",
                                                  "conversation_id": conversation_id})
    body = assert_error(response, 400, "invalid_input")
    assert "belongs to knowledge base" in body["message"]


def test_deleting_the_knowledge_base_deletes_its_conversations(
    api: Api, seeded: tuple[Path, dict[str, str]],
) -> None:
    _chat(api, "hotel limit?")
    assert api.client.delete(f"/api/kbs/{seeded[1]['kb']}").status_code == 204
    assert _listed(api) == []
