"""Conversation tools over HTTP: feedback per turn (validated, replaced by a second POST,
listed in the turn and in /api/feedback, scoped per API key), rename, search, regenerate; and
the loop from feedback to `ragsift feedback export` to `ragsift eval --kb`."""

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


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("feedback_seed") / "data"
    seed(data)
    return data


@pytest.fixture
def api(seeded: Path, tmp_path: Path) -> Iterator[Api]:
    with open_api(copy_data(seeded, tmp_path / "data"), **chat_settings(None)) as app:
        yield app


def _chat(api: Api, message: str, conversation_id: str | None = None,
          **extra: Any) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={
        "kb": "docs", "message": message, "conversation_id": conversation_id, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _feedback(api: Api, turn: dict[str, Any], **body: Any) -> Any:
    return api.client.post(f"/api/conversations/{turn['conversation_id']}/turns/"
                           f"{turn['turn_id']}/feedback", json=body)


def _turns(api: Api, conversation_id: str) -> list[dict[str, Any]]:
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
    [stored] = _turns(api, turn["conversation_id"])
    assert stored["feedback"]["rating"] == "down" and stored["feedback"]["missing"]

    second = _feedback(api, turn, rating="up")  # replaces the first
    assert second.status_code == 200, second.text
    [stored] = _turns(api, turn["conversation_id"])
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
    turns = _turns(api, first["conversation_id"])
    assert [(t["id"], t["version"], t["version_of"], t["superseded"]) for t in turns] == [
        (first["turn_id"], 1, None, True), (again["turn_id"], 2, first["turn_id"], False)]
    stale = api.client.post("/api/chat", json={
        "kb": "docs", "message": "hotel limit per night?",
        "conversation_id": first["conversation_id"], "regenerate_turn_id": first["turn_id"]})
    assert "only the last answer can be regenerated" in assert_error(
        stale, 400, "invalid_input")["message"]


def test_feedback_routes_follow_the_api_key(seeded: Path, tmp_path: Path) -> None:
    with open_api(copy_data(seeded, tmp_path / "data"), auth=True,
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
    seeded: Path, tmp_path: Path,
) -> None:
    data = copy_data(seeded, tmp_path / "data")
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
