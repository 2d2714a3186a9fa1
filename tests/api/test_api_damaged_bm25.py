"""A KB whose BM25 index was damaged on disk, over HTTP: reported, degraded, repaired."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from api.api_helpers import FIRMWARE, HOTELS, LEAVE, Api, assert_error
from api.conftest import open_api
from support.damage import bm25_directory, damage_bm25

QUERY = "hotel limit per night"
FAQ = b'{"question": "What is the hotel limit per night?", "answer": "150 dollars."}\n'


def sparse(api: Api, kb_id: str, query: str) -> list[tuple[str, float]]:
    return [(hit["chunk_id"], hit["sparse_score"])
            for hit in api.search(kb_id, query, mode="sparse", small2big=False)]


def explain(api: Api, kb_id: str) -> dict[str, Any]:
    response = api.client.post("/api/retrieval/explain", json={"kb_id": kb_id, "query": QUERY})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_damaged_bm25_index_is_reported_degrades_its_kb_only_and_is_rebuilt(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with open_api(data) as api:
        kb_id, other_id = api.create_kb("docs"), api.create_kb("other")
        api.ingest(kb_id, {"hotels.md": HOTELS, "leave.md": LEAVE})
        api.ingest(other_id, {"firmware.txt": FIRMWARE})
        imported = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)})
        assert imported.status_code == 200, imported.text
        before = sparse(api, kb_id, QUERY)
    for index in ("index", "faq_index"):
        damage_bm25(bm25_directory(data / index, kb_id), "emptied")

    with open_api(data) as api:  # the app starts on the damaged data directory
        ready = api.client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["status"] == "degraded"
        checks = ready.json()["checks"]
        assert checks["database"] == "ok"
        for index in ("index", "faq_index"):
            assert checks[index].startswith(
                "degraded: the BM25 index of knowledge base 'docs' cannot be read")
            assert f"POST /api/kbs/{kb_id}/rebuild-sparse" in checks[index]

        degraded = explain(api, kb_id)
        assert [d["code"] for d in degraded["trace"]["degradations"]] == [
            "sparse_retrieval_failed", "faq_retrieval_failed"]
        assert degraded["results"] and degraded["faq"]  # both on their dense channel
        more = b'{"question": "Is parking paid?", "answer": "5 dollars per day."}\n'
        more_faq = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("more.jsonl", more)})
        assert "rebuild-sparse" in assert_error(more_faq, 503, "sparse_index_broken")["message"]
        refused = api.client.post("/api/retrieval/search",
                                  json={"kb_id": kb_id, "query": QUERY, "mode": "sparse"})
        assert "rebuild-sparse" in assert_error(refused, 503, "retrieval_unavailable")["message"]
        (upload,) = api.upload_ids(kb_id, {"more.md": b"# More\n\nParking is 5 dollars.\n"})
        document = api.wait_settled(upload)
        assert document["status"] == "FAILED" and "rebuild-sparse" in document["error"]
        assert sparse(api, other_id, "E-104 firmware")  # other KBs keep their BM25

        rebuilt = api.client.post(f"/api/kbs/{kb_id}/rebuild-sparse")

        assert rebuilt.status_code == 200, rebuilt.text
        assert sparse(api, kb_id, QUERY) == before
        repaired = explain(api, kb_id)
        assert repaired["trace"]["degradations"] == []
        assert repaired["faq"][0]["sparse_rank"] == 1
        assert api.client.get("/readyz").json()["status"] == "ok"
