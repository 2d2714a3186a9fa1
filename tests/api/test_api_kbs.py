"""Knowledge bases over HTTP: create, list, get, delete, and their error codes."""

from __future__ import annotations

from api.api_helpers import HOTELS, Api, assert_error


def test_a_knowledge_base_is_created_listed_and_fetched(api: Api) -> None:
    created = api.client.post("/api/kbs", json={"name": " handbook "})
    assert created.status_code == 201
    body = created.json()
    assert body["name"] == "handbook"
    assert body["embedding_model"] == api.container.embedder.model_id
    assert body["embedding_dim"] == 384
    assert (body["documents"], body["ready"], body["faq"]) == (0, 0, 0)

    listed = api.client.get("/api/kbs").json()
    assert [kb["id"] for kb in listed] == [body["id"]]
    assert api.client.get(f"/api/kbs/{body['id']}").json() == body


def test_a_taken_name_is_a_conflict_and_a_blank_name_is_invalid(api: Api) -> None:
    api.create_kb("handbook")
    assert_error(api.client.post("/api/kbs", json={"name": "handbook"}), 409, "kb_exists")
    assert_error(api.client.post("/api/kbs", json={"name": "   "}), 422, "invalid_request")
    assert_error(api.client.post("/api/kbs", json={}), 422, "invalid_request")
    assert_error(api.client.post("/api/kbs", json={"name": "x", "extra": 1}), 422,
                 "invalid_request")
    assert_error(api.client.post("/api/kbs", content=b"not json",
                                 headers={"content-type": "application/json"}),
                 422, "invalid_request")


def test_unknown_knowledge_bases_are_not_found(api: Api) -> None:
    assert_error(api.client.get("/api/kbs/nope"), 404, "not_found")
    assert_error(api.client.delete("/api/kbs/nope"), 404, "not_found")
    assert_error(api.client.get("/api/kbs/nope/documents"), 404, "not_found")


def test_deleting_a_knowledge_base_removes_its_documents_from_the_indexes(api: Api) -> None:
    kb_id = api.create_kb()
    api.ingest(kb_id, {"hotels.md": HOTELS})
    assert api.container.index.count() > 0
    [document_id] = [d["id"] for d in api.client.get(f"/api/kbs/{kb_id}/documents").json()]

    assert api.client.delete(f"/api/kbs/{kb_id}").status_code == 204

    assert api.container.index.count() == 0
    assert_error(api.client.get(f"/api/kbs/{kb_id}"), 404, "not_found")
    assert_error(api.client.get(f"/api/documents/{document_id}"), 404, "not_found")
    assert api.client.get("/api/kbs").json() == []
