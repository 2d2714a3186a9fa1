"""POST /api/kbs/{id}/rebuild-sparse and /reindex on a live app."""

from __future__ import annotations

from api.api_helpers import HOTELS, LEAVE, Api, assert_error


def sparse(api: Api, kb_id: str, query: str) -> list[tuple[str, float]]:
    return [(hit["chunk_id"], hit["sparse_score"])
            for hit in api.search(kb_id, query, mode="sparse", small2big=False)]


def test_rebuild_sparse_rebuilds_from_the_facts_and_keeps_the_answers(api: Api) -> None:
    kb_id = api.create_kb()
    ids = api.ingest(kb_id, {"hotels.md": HOTELS, "leave.md": LEAVE})
    before = [sparse(api, kb_id, q) for q in ("hotel limit per night", "年假 结转")]
    children = sum(
        1 for d in ids for c in api.container.repository.list_chunks(d) if c.level == 1
    )

    response = api.client.post(f"/api/kbs/{kb_id}/rebuild-sparse")

    assert response.status_code == 200, response.text
    assert response.json() == {"kb_id": kb_id, "chunks": children, "faq_entries": 0}
    assert [sparse(api, kb_id, q) for q in ("hotel limit per night", "年假 结转")] == before


def test_rebuild_sparse_of_an_unknown_kb_is_404(api: Api) -> None:
    assert_error(api.client.post("/api/kbs/nope/rebuild-sparse"), 404, "not_found")
    assert_error(api.client.post("/api/kbs/nope/reindex"), 404, "not_found")


def test_reindex_queues_every_settled_document_and_they_end_ready_again(api: Api) -> None:
    kb_id = api.create_kb()
    ids = api.ingest(kb_id, {"hotels.md": HOTELS, "leave.md": LEAVE})
    bad = api.upload_ids(kb_id, {"broken.pdf": b"%PDF-1.4\nnot a pdf\n%%EOF\n"})
    assert api.wait_settled(bad[0])["status"] == "FAILED"
    before = sparse(api, kb_id, "hotel limit per night")

    response = api.client.post(f"/api/kbs/{kb_id}/reindex")

    assert response.status_code == 202, response.text
    body = response.json()
    assert sorted(body["queued"]) == sorted([*ids, *bad]) and body["skipped"] == []
    assert [api.wait_settled(d)["status"] for d in ids] == ["READY", "READY"]
    assert api.wait_settled(bad[0])["status"] == "FAILED"
    assert sparse(api, kb_id, "hotel limit per night") == before
