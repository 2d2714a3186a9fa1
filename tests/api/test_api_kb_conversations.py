"""Conversations under their knowledge base: /api/kbs/{kb_id}/conversations lists, gets and
deletes a KB's conversations; one of another KB is not there (404)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.api_helpers import Api, assert_error
from api.chat_helpers import chat_settings, copy_data, seed
from api.conftest import open_api


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    data = tmp_path_factory.mktemp("kb_conversations_seed") / "data"
    return data, seed(data)


@pytest.fixture
def api(seeded: tuple[Path, dict[str, str]], tmp_path: Path) -> Iterator[Api]:
    with open_api(copy_data(seeded[0], tmp_path / "data"), **chat_settings(None)) as app:
        yield app


def _chat(api: Api, kb: str, message: str) -> dict[str, Any]:
    response = api.client.post("/api/chat", json={"kb": kb, "message": message})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_kbs_conversations_are_listed_got_and_deleted_under_the_kb(
    api: Api, seeded: tuple[Path, dict[str, str]],
) -> None:
    kb_id = seeded[1]["kb"]
    other = api.create_kb("other")
    mine = _chat(api, "docs", "hotel limit per night?")["conversation_id"]
    theirs = _chat(api, "other", "hotel limit per night?")["conversation_id"]

    listed = api.client.get(f"/api/kbs/{kb_id}/conversations").json()
    assert [c["id"] for c in listed] == [mine]
    detail = api.client.get(f"/api/kbs/{kb_id}/conversations/{mine}")
    assert detail.status_code == 200 and detail.json()["turns"][0]["question"] == (
        "hotel limit per night?")

    assert_error(api.client.get(f"/api/kbs/{kb_id}/conversations/{theirs}"), 404, "not_found")
    assert_error(api.client.delete(f"/api/kbs/{kb_id}/conversations/{theirs}"), 404,
                 "not_found")
    assert api.client.get(f"/api/conversations/{theirs}").status_code == 200

    assert api.client.delete(f"/api/kbs/{kb_id}/conversations/{mine}").status_code == 204
    assert api.client.get(f"/api/conversations/{mine}").status_code == 404
    assert [c["id"] for c in api.client.get(f"/api/kbs/{other}/conversations").json()] == [
        theirs]


def test_the_conversations_of_an_unknown_kb_are_a_404(api: Api) -> None:
    assert_error(api.client.get("/api/kbs/nope/conversations"), 404, "not_found")
