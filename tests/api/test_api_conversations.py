"""Conversations over HTTP: created by their first message, listed newest first, restored
exactly as answered without searching again, deleted (404 after), gone with their KB.

Issue 38: feedback per turn (validated, replaced by a second POST, listed in the turn and in
/api/feedback, scoped per API key), rename, search, regenerate; and the loop from feedback to
`ragsift feedback export` to `ragsift eval --kb`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from api.api_helpers import Api, assert_error
from api.auth_helpers import as_key, new_key
from api.chat_helpers import chat_settings, copy_data, seed
from api.conftest import open_api
from ragsift.cli import app as cli

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


def _chat(api: Api, message: str, conversation_id: str | None = None,
          **extra: Any) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={
        "kb": "docs", "message": message, "conversation_id": conversation_id, **extra,
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


# ---------- feedback, rename, search, regenerate (issue 38) ----------

def _feedback(api: Api, turn: dict[str, Any], **body: Any) -> Any:
    return api.client.post(f"/api/conversations/{turn['conversation_id']}/turns/"
                           f"{turn['turn_id']}/feedback", json=body)


def _stored_turns(api: Api, conversation_id: str) -> list[dict[str, Any]]:
    response = api.client.get(f"/api/conversations/{conversation_id}")
    assert response.status_code == 200, response.text
    turns: list[dict[str, Any]] = response.json()["turns"]
    return turns


def test_feedback_is_validated_stored_with_the_turn_replaced_and_listed(api: Api) -> None:
    turn = _chat(api, "hotel limit per night?")
    assert turn["evidence"] and turn["citations"]
    assert_error(_feedback(api, turn, rating="meh"), 422, "invalid_request")
    unknown = assert_error(_feedback(api, turn, rating="down", wrong_sources=[99]), 400,
                           "invalid_input")
    assert "99 is not a source of turn" in unknown["message"]
    assert_error(api.client.post(f"/api/conversations/{turn['conversation_id']}/turns/nope/"
                                 "feedback", json={"rating": "up"}), 404, "not_found")

    first = _feedback(api, turn, rating="down", comment="  wrong city ", wrong_sources=[1],
                      missing="the Tokyo rate")
    assert first.status_code == 200, first.text
    chunk = turn["evidence"][0]["chunk_id"]
    assert first.json()["feedback"]["wrong_sources"] == [chunk]  # [1] is stored as its chunk
    assert first.json()["feedback"]["comment"] == "wrong city"
    [stored] = _stored_turns(api, turn["conversation_id"])
    assert stored["feedback"]["rating"] == "down" and stored["feedback"]["missing"]

    second = _feedback(api, turn, rating="up")  # replaces the first
    assert second.status_code == 200, second.text
    [stored] = _stored_turns(api, turn["conversation_id"])
    assert (stored["feedback"]["rating"], stored["feedback"]["wrong_sources"],
            stored["feedback"]["comment"]) == ("up", [], None)

    other = _chat(api, "年假可以结转几天？")
    assert _feedback(api, other, rating="down").status_code == 200
    listed = api.client.get("/api/feedback").json()
    assert listed["total"] == 2 and [i["turn_id"] for i in listed["items"]] == [
        other["turn_id"], turn["turn_id"]]
    downs = api.client.get("/api/feedback", params={"kb": "docs", "rating": "down"}).json()
    assert [i["turn_id"] for i in downs["items"]] == [other["turn_id"]]
    page = api.client.get("/api/feedback", params={"offset": 1, "limit": 1}).json()
    assert (page["total"], [i["turn_id"] for i in page["items"]]) == (2, [turn["turn_id"]])
    assert_error(api.client.get("/api/feedback", params={"kb": "nope"}), 404, "not_found")


def test_rename_search_and_kb_filter(api: Api) -> None:
    hotel = _chat(api, "hotel limit per night?")
    leave = _chat(api, "年假可以结转几天？")
    renamed = api.client.patch(f"/api/conversations/{hotel['conversation_id']}",
                               json={"title": "  Travel costs  "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "Travel costs"
    assert_error(api.client.patch(f"/api/conversations/{hotel['conversation_id']}",
                                  json={"title": "   "}), 422, "invalid_request")
    assert_error(api.client.patch("/api/conversations/nope", json={"title": "x"}), 404,
                 "not_found")

    def found(**params: str) -> list[str]:
        response = api.client.get("/api/conversations", params=params)
        assert response.status_code == 200, response.text
        return [c["id"] for c in response.json()]

    assert found(q="travel") == [hotel["conversation_id"]]  # the new title
    assert found(q="结转") == [leave["conversation_id"]]  # a question
    kb_id = api.container.repository.get_kb_by_name("docs").id  # type: ignore[union-attr]
    assert set(found(kb_id=kb_id)) == {hotel["conversation_id"], leave["conversation_id"]}
    assert found(kb_id="another") == []


def test_regenerate_stores_a_new_version_and_keeps_the_old(api: Api) -> None:
    first = _chat(api, "hotel limit per night?")
    wrong = api.client.post("/api/chat", json={
        "kb": "docs", "message": "something else", "conversation_id": first["conversation_id"],
        "regenerate_turn_id": first["turn_id"]})
    assert_error(wrong, 400, "invalid_input")
    again = _chat(api, "hotel limit per night?", first["conversation_id"],
                  regenerate_turn_id=first["turn_id"])
    turns = _stored_turns(api, first["conversation_id"])
    assert [(t["id"], t["version"], t["version_of"], t["superseded"]) for t in turns] == [
        (first["turn_id"], 1, None, True), (again["turn_id"], 2, first["turn_id"], False)]
    stale = api.client.post("/api/chat", json={
        "kb": "docs", "message": "hotel limit per night?",
        "conversation_id": first["conversation_id"], "regenerate_turn_id": first["turn_id"]})
    assert "only the last answer can be regenerated" in assert_error(
        stale, 400, "invalid_input")["message"]


def test_feedback_routes_follow_the_api_key(
    seeded: tuple[Path, dict[str, str]], tmp_path: Path,
) -> None:
    with open_api(copy_data(seeded[0], tmp_path / "data"), auth=True,
                  **chat_settings(None)) as api:
        alice, bob = new_key(api, "alice"), new_key(api, "bob")
        turn = as_key(api, alice, "POST", "/api/chat",
                      json={"kb": "docs", "message": "hotel limit per night?"}).json()
        path = f"/api/conversations/{turn['conversation_id']}/turns/{turn['turn_id']}/feedback"
        assert_error(as_key(api, bob, "POST", path, json={"rating": "up"}), 404, "not_found")
        assert_error(as_key(api, bob, "PATCH", f"/api/conversations/{turn['conversation_id']}",
                            json={"title": "mine"}), 404, "not_found")
        assert as_key(api, alice, "POST", path, json={"rating": "up"}).status_code == 200
        assert as_key(api, bob, "GET", "/api/feedback").json()["total"] == 0
        assert as_key(api, alice, "GET", "/api/feedback").json()["total"] == 1


def test_feedback_exports_to_labels_that_ragsift_eval_scores(
    seeded: tuple[Path, dict[str, str]], tmp_path: Path,
) -> None:
    data = copy_data(seeded[0], tmp_path / "data")
    with open_api(data, **chat_settings(None)) as api:
        up = _chat(api, "hotel limit per night?")
        down = _chat(api, "年假可以结转几天？")
        none = _chat(api, "what does error E-104 mean")
        assert _feedback(api, up, rating="up").status_code == 200
        assert _feedback(api, down, rating="down", wrong_sources=[1],
                         missing="the 2024 leave policy").status_code == 200
        assert _feedback(api, none, rating="down", comment="vague").status_code == 200
    labels = tmp_path / "feedback.jsonl"
    # in this process (the model is loaded already): two subprocesses would take ~40 s here
    runner = CliRunner(env={"RAGSIFT_DATA_DIR": str(data)})
    exported = runner.invoke(cli, ["feedback", "export", "--kb", "docs", "-o", str(labels)])
    assert exported.exit_code == 0, exported.output
    assert "2 labelled queries (1 up, 1 down); 1 rated answers gave no label" in exported.stderr
    lines = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines()]
    assert [(line["query"], line["rating"]) for line in lines] == [
        ("hotel limit per night?", "up"), ("年假可以结转几天？", "down")]
    assert {e["grade"] for e in lines[0]["relevant"]} == {1}
    assert lines[0]["relevant"][0]["chunk"] == up["citations"][0]["chunk_id"]
    assert lines[1]["relevant"] == [{"chunk": down["evidence"][0]["chunk_id"], "grade": 0}]
    assert lines[1]["missing"] == "the 2024 leave policy"

    scored = runner.invoke(cli, ["eval", "--kb", "docs", "--queries", str(labels), "--json"])
    assert scored.exit_code == 0, scored.output
    report = json.loads(scored.stdout)
    [config] = report["configs"]
    assert config["queries_scored"] == 1  # the up vote; the down vote awaits its right document
    assert report["kb"]["live"] is True
