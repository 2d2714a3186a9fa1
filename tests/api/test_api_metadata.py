"""Document metadata over HTTP: set at upload, changed by PATCH without re-embedding, shown on
the document and on every hit, and filtered on by search, explain and chat (400 naming the
bad part of a filter)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from api.api_helpers import FIRMWARE, HOTELS, LEAVE, Api, assert_error
from api.auth_helpers import as_key, bearer, make_keys, new_key
from api.conftest import ApiFactory, open_api

Ready = tuple[Api, str, dict[str, str]]


@pytest.fixture(scope="module")
def ready(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ready]:
    """KB "docs": hotels.md uploaded with metadata, leave.md and firmware.txt without."""
    with open_api(tmp_path_factory.mktemp("metadata")) as api:
        kb_id = api.create_kb("docs")
        [hotels] = api.upload_ids(kb_id, {"hotels.md": HOTELS}, metadata=json.dumps(
            {"dept": "finance", "year": 2023, "issued": {"$date": "2023-03-01"}}))
        others = api.upload_ids(kb_id, {"leave.md": LEAVE, "firmware.txt": FIRMWARE})
        for document_id in (hotels, *others):
            assert api.wait_settled(document_id)["status"] == "READY"
        yield api, kb_id, {"hotels.md": hotels, "leave.md": others[0],
                           "firmware.txt": others[1]}


def test_upload_metadata_is_kept_typed_and_a_patch_merges_without_reembedding(
    ready: Ready,
) -> None:
    api, _, ids = ready
    hotels = api.client.get(f"/api/documents/{ids['hotels.md']}").json()
    assert hotels["metadata"] == {"dept": "finance", "year": 2023,
                                  "issued": {"$date": "2023-03-01"}}
    chunks_before = api.container.repository.list_chunks(ids["leave.md"])
    response = api.client.patch(f"/api/documents/{ids['leave.md']}", json={
        "metadata": {"dept": "hr", "year": 2024, "tags": ["policy", "leave"]}})
    assert response.status_code == 200, response.text
    response = api.client.patch(f"/api/documents/{ids['leave.md']}",
                                json={"metadata": {"tags": None, "final": True}})
    assert response.json()["metadata"] == {"dept": "hr", "year": 2024, "final": True}
    # the same chunks (ids and text) as before: nothing was re-chunked or re-embedded
    assert api.container.repository.list_chunks(ids["leave.md"]) == chunks_before
    # the BM25 index's metadata terms of its chunks follow the change
    assert _indexed_with(api, ready[1], "dept", "hr") >= 1
    assert _indexed_with(api, ready[1], "final", True) >= 1
    listed = api.client.get(f"/api/kbs/{ready[1]}/documents").json()
    assert {d["filename"]: d["metadata"].get("dept") for d in listed} == {
        "hotels.md": "finance", "leave.md": "hr", "firmware.txt": None}


def test_search_filters_on_metadata_and_every_hit_carries_it(ready: Ready) -> None:
    api, kb_id, ids = ready
    api.client.patch(f"/api/documents/{ids['leave.md']}",
                     json={"metadata": {"dept": "hr", "year": 2024}, "replace": True})
    hits = api.search(kb_id, "hotel limit per night", filter={"year": {"$gte": 2024}})
    assert hits and {h["document_id"] for h in hits} == {ids["leave.md"]}
    assert all(h["metadata"] == {"dept": "hr", "year": 2024} for h in hits)
    dated = api.search(kb_id, "hotel limit per night",
                       filter={"issued": {"$lt": {"$date": "2024-01-01"}}})
    assert {h["document_id"] for h in dated} == {ids["hotels.md"]}
    unfiltered = api.search(kb_id, "error E-104", top_k=10)
    assert {h["metadata"] == {} for h in unfiltered if h["document_id"] == ids["firmware.txt"]
            } == {True}
    explained = api.client.post("/api/retrieval/explain", json={
        "kb_id": kb_id, "query": "hotel", "filter": {"dept": "nobody"}}).json()
    assert explained["results"] == []
    assert explained["trace"]["scope"]["filter_documents_matched"] == 0
    assert "metadata filter" in explained["trace"]["scope"]["empty_reason"]
    chat = api.client.post("/api/chat", json={
        "kb_id": kb_id, "message": "hotel limit per night", "filter": {"dept": "hr"}})
    assert chat.status_code == 200, chat.text
    assert {e["document_id"] for e in chat.json()["evidence"]} == {ids["leave.md"]}


def test_bad_filters_and_metadata_are_400_naming_the_offending_part(ready: Ready) -> None:
    api, kb_id, ids = ready
    body = assert_error(api.client.post("/api/retrieval/search", json={
        "kb_id": kb_id, "query": "hotel", "filter": {"$or": [{"year": {"$gt": True}}]}}),
        400, "invalid_input")
    assert "filter.$or[0].year.$gt" in body["message"]
    body = assert_error(api.client.patch(f"/api/documents/{ids['hotels.md']}", json={
        "metadata": {"tenant_id": "t9"}}), 400, "invalid_input")
    assert "reserved" in body["message"]
    assert_error(api.upload(kb_id, {"x.txt": b"text"}, metadata="{not json"),
                 400, "invalid_input")


FACILITIES = b"""---
site: north
year: 2020
---
# Facilities

## Parking

Staff park in garage B under the north tower. A parking permit costs 40 dollars per month and
is renewed every January at the reception desk.
"""


def test_search_explain_and_chat_take_several_kbs_and_name_each_hits_kb(ready: Ready) -> None:
    api, docs, _ = ready
    facilities = api.create_kb("facilities")
    [parking] = api.upload_ids(facilities, {"facilities.md": FACILITIES},
                               metadata=json.dumps({"year": 2026}))
    assert api.wait_settled(parking)["status"] == "READY"
    body = {"kbs": ["docs", facilities], "query": "how much is a parking permit"}

    hits = api.client.post("/api/retrieval/search", json=body).json()
    explained = api.client.post("/api/retrieval/explain", json=body).json()
    chat = api.client.post("/api/chat", json={
        "kbs": ["docs", "facilities"], "message": "how much is a parking permit"})
    missing = api.client.post("/api/retrieval/search", json={**body, "kbs": [docs, "nope"]})
    both = api.client.post("/api/retrieval/search", json={**body, "kb": "docs"})

    assert hits[0]["kb_id"] == facilities and "40 dollars" in hits[0]["text"]
    # the front matter is metadata (the form's wins over it), not text
    assert hits[0]["metadata"] == {"site": "north", "year": 2026}
    assert all("site: north" not in hit["text"] for hit in hits)
    assert {hit["kb_id"] for hit in hits} == {docs, facilities}
    trace = explained["trace"]
    assert [part["kb_id"] for part in trace["kbs"]] == [docs, facilities]
    assert trace["hit_kbs"] == {hit["chunk_id"]: hit["kb_id"] for hit in explained["results"]}
    assert chat.status_code == 200, chat.text
    assert chat.json()["evidence"][0]["kb_id"] == facilities
    assert all(c["kb_id"] in (docs, facilities) for c in chat.json()["citations"])
    assert_error(missing, 404, "not_found")
    assert both.status_code in (400, 422) and "exactly one of kb_id, kb and kbs" in both.text


def test_metadata_keys_list_each_key_with_its_types_and_samples(ready: Ready) -> None:
    api, kb_id, ids = ready
    api.client.patch(f"/api/documents/{ids['leave.md']}",
                     json={"metadata": {"dept": "hr", "year": 2024, "tags": ["policy"]},
                           "replace": True})

    keys = api.client.get(f"/api/kbs/{kb_id}/metadata-keys")

    assert keys.status_code == 200, keys.text
    by_key = {entry["key"]: entry for entry in keys.json()}
    assert list(by_key) == sorted(by_key)
    assert by_key["dept"] == {"key": "dept", "types": ["string"], "documents": 2,
                              "samples": ["finance", "hr"]}
    assert by_key["year"]["types"] == ["number"] and by_key["year"]["samples"] == [2023, 2024]
    assert by_key["issued"]["types"] == ["date"]
    assert by_key["issued"]["samples"] == [{"$date": "2023-03-01"}]
    assert by_key["tags"] == {"key": "tags", "types": ["list"], "documents": 1,
                              "samples": ["policy"]}
    assert_error(api.client.get("/api/kbs/nope/metadata-keys"), 404, "not_found")


def test_metadata_keys_show_only_documents_within_the_keys_scope(make_api: ApiFactory) -> None:
    api = make_api(auth=True)
    admin = bearer(make_keys(api).admin)
    kb_id = api.client.post("/api/kbs", json={"name": "scoped"}, headers=admin).json()["id"]
    for tenant, meta in (("t1", {"dept": "hr"}), ("t2", {"secret": "x"})):
        response = api.client.post(
            f"/api/kbs/{kb_id}/documents", headers=admin,
            files=[("files", (f"{tenant}.txt", f"note of {tenant}".encode(), "text/plain"))],
            data={"tenant_id": tenant, "metadata": json.dumps(meta)})
        assert response.status_code == 202, response.text
    reader = new_key(api, "t1-reader", tenant_ids=("t1",))

    seen = as_key(api, reader, "GET", f"/api/kbs/{kb_id}/metadata-keys")

    assert seen.status_code == 200, seen.text
    assert [entry["key"] for entry in seen.json()] == ["dept"]


def test_a_duplicate_upload_keeps_the_documents_metadata_and_says_so(ready: Ready) -> None:
    api, kb_id, ids = ready
    before = api.client.get(f"/api/documents/{ids['hotels.md']}").json()["metadata"]

    again = api.upload(kb_id, {"copy-of-hotels.md": HOTELS},
                       metadata=json.dumps({"dept": "legal"}))
    same = api.upload(kb_id, {"hotels.md": HOTELS}, metadata=json.dumps(before))
    retyped = api.upload(kb_id, {"hotels.md": HOTELS},
                         metadata=json.dumps({**before, "year": float(before["year"])}))
    replaced = api.upload(kb_id, {"hotels.md": HOTELS},
                          metadata=json.dumps({"dept": "legal"}), replace="true")

    [first] = again.json()["documents"]
    assert first["duplicate"] and first["id"] == ids["hotels.md"]
    assert first["metadata_ignored"] is True
    # the same metadata again: nothing to ignore
    assert same.json()["documents"][0]["metadata_ignored"] is False
    # 2023.0 is another JSON value than the stored 2023: not the same metadata
    assert retyped.json()["documents"][0]["metadata_ignored"] is True
    [asked] = replaced.json()["documents"]
    assert asked["duplicate"] and asked["metadata_ignored"] is False
    assert api.client.get(f"/api/documents/{ids['hotels.md']}").json()["metadata"] == {
        "dept": "legal"}
    api.client.patch(f"/api/documents/{ids['hotels.md']}",
                     json={"metadata": before, "replace": True})


def test_a_patch_that_changes_only_a_values_type_is_a_change(ready: Ready) -> None:
    """true and 1 are equal in Python, not in a filter: a PATCH from one to the other is
    written, and the filter and the BM25 index's metadata terms follow it."""
    api, kb_id, ids = ready
    firmware = f"/api/documents/{ids['firmware.txt']}"
    api.client.patch(firmware, json={"metadata": {"signed": True}})
    assert _ids(api.search(kb_id, "error E-104", filter={"signed": True})) == {
        ids["firmware.txt"]}
    response = api.client.patch(firmware, json={"metadata": {"signed": 1}})
    assert response.json()["metadata"] == {"signed": 1}
    assert api.client.get(firmware).json()["metadata"]["signed"] is not True
    assert _ids(api.search(kb_id, "error E-104", filter={"signed": True})) == set()
    assert _ids(api.search(kb_id, "error E-104", filter={"signed": 1})) == {ids["firmware.txt"]}
    assert _indexed_with(api, kb_id, "signed", 1) >= 1
    assert _indexed_with(api, kb_id, "signed", True) == 0
    api.client.patch(firmware, json={"metadata": {}, "replace": True})


def test_a_patch_after_a_concurrent_change_is_published_and_indexed(
    ready: Ready, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another change lands between the route's read of the document and its write: the
    PATCH restores what the route read, which is still a change of the stored metadata, so
    the BM25 index's metadata terms follow it (they were compared with the read before)."""
    api, kb_id, ids = ready
    firmware = f"/api/documents/{ids['firmware.txt']}"
    api.client.patch(firmware, json={"metadata": {"tier": "gold"}, "replace": True})
    repository = api.container.repository
    real_update = repository.update_metadata

    def concurrent_then_update(document_id: str, change: Any) -> Any:
        real_update(document_id, lambda current: {**current, "tier": "silver"})
        api.container.ingestion.refresh_metadata(
            {document_id: {**current_metadata(document_id), "tier": "silver"}})
        return real_update(document_id, change)

    def current_metadata(document_id: str) -> dict[str, Any]:
        document = repository.get_document(document_id)
        assert document is not None
        return dict(document.metadata)

    monkeypatch.setattr(repository, "update_metadata", concurrent_then_update)
    response = api.client.patch(firmware, json={"metadata": {"tier": "gold"}})
    monkeypatch.undo()
    assert response.json()["metadata"] == {"tier": "gold"}
    assert _indexed_with(api, kb_id, "tier", "gold") >= 1
    assert _indexed_with(api, kb_id, "tier", "silver") == 0
    assert _ids(api.search(kb_id, "error E-104", filter={"tier": "gold"})) == {
        ids["firmware.txt"]}
    api.client.patch(firmware, json={"metadata": {}, "replace": True})


def _ids(hits: list[dict[str, object]]) -> set[object]:
    return {h["document_id"] for h in hits}


def _indexed_with(api: Api, kb_id: str, key: str, value: object) -> int:
    """Chunks of the kb's BM25 index carrying one metadata term, as committed."""
    import tantivy

    from ragsift.adapters.embedded_index.bm25_kb import KbIndex
    from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
    from ragsift.adapters.embedded_index.bm25_schema import METADATA, schema
    from ragsift.domain.metadata_terms import scalar_token

    directory = api.container.settings.data_dir / "index" / "sparse" / kb_directory_name(kb_id)
    query = tantivy.Query.term_query(schema(), METADATA, scalar_token(key, value))  # type: ignore[arg-type]
    return int(KbIndex(directory, schema()).searcher.search(query, 1, count=True).count)
