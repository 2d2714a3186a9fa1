"""GET / PATCH /api/kbs/{id}/settings on a live app (issue 38): a KB's own chunking reaches
the chunks of a document ingested after the change, its search defaults reach a search that
leaves them unset, a reindex clears "changed since build", and versions record the settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.api_helpers import Api, assert_error
from api.conftest import open_api

# ~250 tokens of prose: 32-token children (the app's default here) vs 128-token children
LONG = "\n\n".join(
    f"Section {i}. The travel policy sets a hotel limit of {100 + i} dollars per night in "
    f"city {i}, and meals are refunded against itemised receipts within {i + 3} days."
    for i in range(8)
).encode()
FAQ = b'{"question": "How do I reset the router?", "answer": "Hold reset for 10 s."}\n'



@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """One app for the module (each test uses its own KB)."""
    with open_api(tmp_path_factory.mktemp("kb_settings") / "data") as started:
        yield started


def children(api: Api, document_id: str) -> int:
    """The document's current child chunks (retired ones stay until collected)."""
    return sum(1 for c in api.container.repository.list_chunks(document_id)
               if c.level == 1 and c.valid_to_seq == 0)


def settings(api: Api, kb_id: str) -> dict[str, Any]:
    response = api.client.get(f"/api/kbs/{kb_id}/settings")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def patch(api: Api, kb_id: str, **body: Any) -> dict[str, Any]:
    response = api.client.patch(f"/api/kbs/{kb_id}/settings", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def test_kb_settings_change_new_chunks_and_search_defaults_until_reindexed(api: Api) -> None:
    kb_id = api.create_kb()
    shown = settings(api, kb_id)
    assert shown["effective"]["chunk_tokens"] == 32 and shown["overridden"] == []
    assert shown["reindex_required"] is False and shown["reindex"] is None
    [first] = api.ingest(kb_id, {"a.md": LONG})

    # refused, naming the key; nothing stored
    body = assert_error(api.client.patch(f"/api/kbs/{kb_id}/settings",
                                         json={"set": {"chunk_size": 64}}), 400, "invalid_input")
    assert "chunk_size" in body["message"]
    body = assert_error(api.client.patch(f"/api/kbs/{kb_id}/settings",
                                         json={"set": {"chunk_tokens": 4096}}), 400,
                        "invalid_input")
    assert "chunk_tokens" in body["message"]
    assert settings(api, kb_id)["overrides"] == {}

    changed = patch(api, kb_id, set={"chunk_tokens": 128, "mode": "sparse"})
    assert changed["overrides"] == {"chunk_tokens": 128, "mode": "sparse"}
    assert changed["changed_since_build"] == ["chunk_tokens"]
    assert changed["reindex_required"] is True
    assert changed["reindex"]["endpoint"] == f"POST /api/kbs/{kb_id}/reindex"
    assert changed["built_with"]["chunk_tokens"] == 32

    [second] = api.ingest(kb_id, {"b.md": LONG + b"\n\nOne more line."})
    assert children(api, second) < children(api, first) / 2

    explained = api.client.post("/api/retrieval/explain",
                                json={"kb_id": kb_id, "query": "hotel limit per night"})
    assert explained.status_code == 200, explained.text
    assert explained.json()["trace"]["mode"] == "sparse"  # the KB's default
    asked = api.client.post("/api/retrieval/explain", json={
        "kb_id": kb_id, "query": "hotel limit per night", "mode": "hybrid"})
    assert asked.json()["trace"]["mode"] == "hybrid"  # the request's own wins

    before = children(api, first)
    assert api.client.post(f"/api/kbs/{kb_id}/reindex").status_code == 202
    assert settings(api, kb_id)["reindex_required"] is False
    assert api.wait_settled(first)["status"] == "READY"
    assert children(api, first) < before / 2

    versions = api.client.get(f"/api/kbs/{kb_id}/versions").json()["versions"]
    assert versions[-1]["settings"]["chunk_tokens"] == 128

    unset = patch(api, kb_id, unset=["chunk_tokens", "mode"])
    assert unset["overrides"] == {} and unset["changed_since_build"] == ["chunk_tokens"]


def test_kb_settings_of_an_unknown_kb_are_404(api: Api) -> None:
    assert_error(api.client.get("/api/kbs/nope/settings"), 404, "not_found")
    assert_error(api.client.patch("/api/kbs/nope/settings", json={"set": {}}), 404, "not_found")


@pytest.mark.parametrize("threshold, direct", [(-1.0, True), (1.0, False)])
def test_a_kbs_faq_threshold_decides_the_direct_answer_in_search_and_chat(
    api: Api, threshold: float, direct: bool,
) -> None:
    kb_id = api.create_kb(f"faq{direct}")
    imported = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)})
    assert imported.status_code == 200, imported.text
    patch(api, kb_id, set={"faq_direct_answer_threshold": threshold})
    question = "Can I get the router back to factory state?"

    explained = api.client.post("/api/retrieval/explain", json={"kb_id": kb_id,
                                                                "query": question})
    faq = explained.json()["trace"]["faq"]["detail"]
    assert (faq["threshold"], faq["direct_answer"]) == (threshold, int(direct))
    chat = api.client.post("/api/chat", json={"kb_id": kb_id, "message": question})
    assert chat.status_code == 200, chat.text
    assert (chat.json()["trace"]["route"]["route"] == "faq_direct") is direct
