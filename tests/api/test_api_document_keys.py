"""REST: keys, replacement (upload with replace=true, PUT content), chunks paging, key filter."""

from __future__ import annotations

import time
from typing import Any

from api.api_helpers import Api, assert_error
from api.conftest import ApiFactory

PARKING_10 = "# 停车\n\n员工停车每天 10 CNY。\n".encode()
PARKING_15 = "# 停车\n\n员工停车每天 15 CNY。\n".encode()


def _upload(api: Api, kb_id: str, name: str, data: bytes, **fields: str) -> Any:
    return api.client.post(f"/api/kbs/{kb_id}/documents",
                           files=[("files", (name, data, "text/markdown"))], data=fields)


def _settled(api: Api, document_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        document: dict[str, Any] = api.client.get(f"/api/documents/{document_id}").json()
        if document["status"] in ("READY", "FAILED") and not document["replacing"]:
            return document
        assert time.monotonic() < deadline, document
        time.sleep(0.02)


def test_an_upload_under_an_existing_key_is_409_unless_replace_is_asked(api: Api) -> None:
    kb_id = api.create_kb("hr")
    [first] = api.ingest(kb_id, {"parking.md": PARKING_10})
    assert_error(_upload(api, kb_id, "parking.md", PARKING_15), 409, "key_exists")
    same = _upload(api, kb_id, "parking.md", PARKING_10).json()["documents"][0]
    assert same["duplicate"] and same["id"] == first
    replaced = _upload(api, kb_id, "parking.md", PARKING_15, replace="true")
    assert replaced.status_code == 202, replaced.text
    body = replaced.json()["documents"][0]
    assert (body["id"], body["replacing"], body["key"]) == (first, True, "parking.md")
    assert _settled(api, first)["status"] == "READY"
    hits = api.search(kb_id, "停车 CNY", mode="sparse")
    assert [hit["document_id"] for hit in hits] == [first]
    assert "15 CNY" in hits[0]["text"] and "10 CNY" not in hits[0]["text"]
    assert len(api.client.get(f"/api/kbs/{kb_id}/documents").json()) == 1


def test_put_content_replaces_one_documents_bytes_and_a_bad_file_keeps_the_old(
    api: Api,
) -> None:
    kb_id = api.create_kb("hr")
    [document_id] = api.ingest(kb_id, {"parking.md": PARKING_10})
    put = api.client.put(f"/api/documents/{document_id}/content",
                         files={"file": ("parking.md", PARKING_15, "text/markdown")})
    assert put.status_code == 202, put.text
    assert _settled(api, document_id)["error"] is None
    assert "15 CNY" in api.search(kb_id, "停车", mode="sparse")[0]["text"]
    bad = api.client.put(f"/api/documents/{document_id}/content",
                         files={"file": ("parking.md", b"   \n", "text/markdown")})
    assert bad.status_code == 202
    document = _settled(api, document_id)
    assert document["status"] == "READY" and "previous content is kept" in document["error"]
    assert "15 CNY" in api.search(kb_id, "停车", mode="sparse")[0]["text"]


def test_documents_filter_by_key_and_chunks_page_through(api: Api) -> None:
    kb_id = api.create_kb("hr")
    long = ("# A\n\n" + "\n\n".join(f"第{i}段 内容 text {i}" for i in range(40))).encode()
    uploaded = _upload(api, kb_id, "long.md", long, key="handbook/long.md")
    document_id = uploaded.json()["documents"][0]["id"]
    assert _settled(api, document_id)["status"] == "READY"
    listed = api.client.get(f"/api/kbs/{kb_id}/documents", params={"key": "handbook/long.md"})
    assert [d["id"] for d in listed.json()] == [document_id]
    page = api.client.get(f"/api/documents/{document_id}/chunks",
                          params={"offset": 1, "limit": 2}).json()
    assert page["offset"] == 1 and page["total"] > 3 and len(page["chunks"]) == 2
    chunk = page["chunks"][0]
    assert set(chunk) == {"id", "level", "parent_id", "ordinal", "heading_path", "locator",
                          "token_count", "text", "asset_ids"}
    assert api.client.get(f"/api/documents/{document_id}/chunks",
                          params={"limit": 501}).status_code == 422


def test_a_key_with_a_dotdot_segment_or_control_characters_is_refused(
    make_api: ApiFactory,
) -> None:
    api = make_api()
    kb_id = api.create_kb("hr")
    for key in ("../etc/passwd", "a/../../b", "bad\x07key"):
        assert_error(_upload(api, kb_id, "x.md", PARKING_10, key=key), 400, "invalid_input")
    ok = _upload(api, kb_id, "x.md", PARKING_10, key="./docs//x.md")
    assert ok.json()["documents"][0]["key"] == "docs/x.md"


def test_replacing_a_document_still_being_ingested_is_409_document_busy(api: Api) -> None:
    kb_id = api.create_kb("hr")
    kb = api.container.repository.get_kb(kb_id)
    assert kb is not None
    # accepted but not processed yet: PENDING, owned by this (live) process
    pending = api.container.ingestion.accept(kb, "parking.md", PARKING_10).document
    put = api.client.put(f"/api/documents/{pending.id}/content",
                         files={"file": ("parking.md", PARKING_15, "text/markdown")})
    assert_error(put, 409, "document_busy")
    again = _upload(api, kb_id, "parking.md", PARKING_15, replace="true")
    assert_error(again, 409, "document_busy")
