"""Documents over HTTP: upload lifecycle, status, list filters, reindex and delete."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from api.api_helpers import CORRUPT_PDF, FIRMWARE, HOTELS, LEAVE, Api, assert_error
from api.chat_helpers import serving
from api.conftest import ApiFactory
from ragsift.api.deps import AppState
from ragsift.api.worker import IngestionWorker
from ragsift.domain.models import DocumentStatus
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.pipeline import IngestOutcome


def test_an_upload_returns_202_at_once_and_the_document_becomes_ready(api: Api) -> None:
    kb_id = api.create_kb()
    response = api.upload(kb_id, {"hotels.md": HOTELS}, source="policy", tenant_id="acme")

    assert response.status_code == 202
    [accepted] = response.json()["documents"]
    assert accepted["filename"] == "hotels.md"
    assert accepted["status"] == "PENDING"
    assert accepted["duplicate"] is False

    document = api.wait_settled(accepted["id"])
    assert document["status"] == "READY", document
    assert document["error"] is None
    assert document["scope"]["source"] == "policy"
    assert document["scope"]["tenant_id"] == "acme"
    assert document["media_type"] == "text/markdown"
    hits = api.search(kb_id, "hotel limit per night")
    assert hits and hits[0]["document_id"] == accepted["id"]


def test_a_corrupt_pdf_ends_failed_with_its_reason(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.upload_ids(kb_id, {"broken.pdf": CORRUPT_PDF})

    document = api.wait_settled(document_id)

    assert document["status"] == "FAILED"
    assert "corrupt" in document["error"].lower()


def test_the_same_bytes_uploaded_again_are_reported_as_a_duplicate(api: Api) -> None:
    kb_id = api.create_kb()
    [first] = api.ingest(kb_id, {"hotels.md": HOTELS})

    [again] = api.upload(kb_id, {"copy.md": HOTELS}).json()["documents"]

    assert again == {"id": first, "filename": "copy.md", "status": "READY", "duplicate": True,
                     "error": None, "key": "hotels.md", "replacing": False,
                     "metadata_ignored": False}


def test_a_file_over_the_limit_is_rejected_with_413(make_api: ApiFactory) -> None:
    api = make_api(max_file_bytes=200)
    kb_id = api.create_kb()

    response = api.upload(kb_id, {"small.txt": b"fits", "big.txt": b"x" * 1000})

    assert_error(response, 413, "file_too_large")
    assert api.client.get(f"/api/kbs/{kb_id}/documents").json() == []  # nothing accepted


def test_an_unsupported_file_type_is_rejected_with_415(api: Api) -> None:
    kb_id = api.create_kb()
    assert_error(api.upload(kb_id, {"tool.exe": b"MZ"}), 415, "unsupported_media_type")
    assert_error(api.upload(kb_id, {"README": b"text"}), 415, "unsupported_media_type")
    not_multipart = api.client.post(f"/api/kbs/{kb_id}/documents", json={"files": []})
    assert_error(not_multipart, 415, "unsupported_media_type")


def test_malformed_uploads_are_invalid_requests(api: Api) -> None:
    kb_id = api.create_kb()
    no_files = api.client.post(f"/api/kbs/{kb_id}/documents", data={"source": "x"},
                               files={"other": ("", b"")})
    assert_error(no_files, 422, "invalid_request")
    wrong_field = api.client.post(f"/api/kbs/{kb_id}/documents",
                                  files={"file": ("a.txt", b"text")})
    assert_error(wrong_field, 422, "invalid_request")
    unknown_form_field = api.upload(kb_id, {"a.txt": b"text"}, colour="blue")
    assert_error(unknown_form_field, 422, "invalid_request")
    truncated = api.client.post(
        f"/api/kbs/{kb_id}/documents", content=b"--b\r\nContent-Disposition: form-data",
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    assert_error(truncated, 422, "invalid_request")


def test_uploading_into_an_unknown_knowledge_base_is_not_found(api: Api) -> None:
    assert_error(api.upload("nope", {"a.txt": b"text"}), 404, "not_found")


def test_concurrent_uploads_of_several_files_all_become_ready(make_api: ApiFactory) -> None:
    api = make_api(max_concurrent_uploads=5)  # all five at once
    kb_id = api.create_kb()
    singles = [{f"note{i}.txt": f"Note {i}: the office opens at {7 + i} am.".encode()}
               for i in range(4)]
    several = {"hotels.md": HOTELS, "leave.md": LEAVE, "firmware.txt": FIRMWARE}

    async def upload_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=api.client.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            return await asyncio.gather(*(
                client.post(f"/api/kbs/{kb_id}/documents",
                            files=[("files", (name, data)) for name, data in files.items()])
                for files in [*singles, several]
            ))

    responses = asyncio.run(upload_all())

    assert [r.status_code for r in responses] == [202] * 5
    ids = [d["id"] for r in responses for d in r.json()["documents"]]
    assert len(set(ids)) == 7
    assert {api.wait_settled(i)["status"] for i in ids} == {"READY"}
    ready = api.client.get(f"/api/kbs/{kb_id}/documents", params={"status": "READY"}).json()
    assert {d["id"] for d in ready} == set(ids)


def test_the_document_list_filters_by_status(api: Api) -> None:
    kb_id = api.create_kb()
    [good] = api.ingest(kb_id, {"hotels.md": HOTELS})
    [bad] = api.upload_ids(kb_id, {"broken.pdf": CORRUPT_PDF})
    api.wait_settled(bad)

    def listed(**params: str) -> list[str]:
        response = api.client.get(f"/api/kbs/{kb_id}/documents", params=params)
        assert response.status_code == 200, response.text
        return [d["id"] for d in response.json()]

    assert listed() == [good, bad]
    assert listed(status="READY") == [good]
    assert listed(status="FAILED") == [bad]
    assert_error(api.client.get(f"/api/kbs/{kb_id}/documents", params={"status": "DONE"}),
                 422, "invalid_request")


def test_unknown_documents_are_not_found(api: Api) -> None:
    assert_error(api.client.get("/api/documents/nope"), 404, "not_found")
    assert_error(api.client.post("/api/documents/nope/reindex"), 404, "not_found")
    assert_error(api.client.delete("/api/documents/nope"), 404, "not_found")


def test_reindex_rebuilds_a_document_from_its_stored_original(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"hotels.md": HOTELS})
    chunks_before = api.container.repository.list_chunks(document_id)

    response = api.client.post(f"/api/documents/{document_id}/reindex")

    assert response.status_code == 202
    assert response.json()["status"] == "PENDING"
    assert api.wait_settled(document_id)["status"] == "READY"
    assert api.container.repository.list_chunks(document_id) == chunks_before
    assert api.search(kb_id, "hotel limit per night")[0]["document_id"] == document_id


def test_reindex_without_a_stored_original_ends_failed_with_the_reason(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"hotels.md": HOTELS})
    objects = api.container.settings.data_dir / "objects" / kb_id / document_id
    for stored in objects.iterdir():
        stored.unlink()

    assert api.client.post(f"/api/documents/{document_id}/reindex").status_code == 202

    document = api.wait_settled(document_id)
    assert document["status"] == "FAILED"
    assert "no stored object" in document["error"]


def _worker(api: Api) -> IngestionWorker:
    state: AppState = api.client.app.state.ragsift  # type: ignore[attr-defined]
    return state.worker


def test_reindex_of_a_document_in_progress_is_a_conflict(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"hotels.md": HOTELS})
    # READY shows before the worker's last status write: wait for it, or it could undo ours
    assert _worker(api).wait_idle(timeout=30)
    api.container.repository.set_status(document_id, DocumentStatus.INDEXING)

    assert_error(api.client.post(f"/api/documents/{document_id}/reindex"), 409, "document_busy")
    document = api.container.repository.get_document(document_id)
    assert document is not None and document.status == DocumentStatus.INDEXING


def test_of_concurrent_reindexes_of_a_document_exactly_one_is_accepted(
    make_api: ApiFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = make_api()
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"hotels.md": HOTELS})
    assert _worker(api).wait_idle(timeout=30)
    # the accepted reindex waits in the worker until the requests are answered, so no
    # request can find the document READY again
    release = threading.Event()
    reindex = api.container.ingestion.reindex

    def held_reindex(doc_id: str, progress: Progress | None = None) -> IngestOutcome:
        release.wait(timeout=60)
        return reindex(doc_id, progress)

    monkeypatch.setattr(api.container.ingestion, "reindex", held_reindex)
    requests = 12
    start = threading.Barrier(requests)

    with serving(api.container) as url:

        def fire(_: int) -> int:
            with httpx.Client(base_url=url, timeout=30) as client:
                start.wait(timeout=30)
                return client.post(f"/api/documents/{document_id}/reindex").status_code

        try:
            with ThreadPoolExecutor(max_workers=requests) as pool:
                statuses = sorted(pool.map(fire, range(requests)))
        finally:
            release.set()

        assert statuses == [202] + [409] * (requests - 1)
        with httpx.Client(base_url=url, timeout=30) as client:
            deadline = time.monotonic() + 30
            while client.get(f"/api/documents/{document_id}").json()["status"] != "READY":
                assert time.monotonic() < deadline, "the accepted reindex never finished"
                time.sleep(0.02)


def test_deleting_a_document_removes_its_hits(api: Api) -> None:
    kb_id = api.create_kb()
    hotels, firmware = api.ingest(kb_id, {"hotels.md": HOTELS, "firmware.txt": FIRMWARE})
    assert hotels in {h["document_id"] for h in api.search(kb_id, "hotel limit per night")}

    assert api.client.delete(f"/api/documents/{hotels}").status_code == 204

    assert hotels not in {h["document_id"] for h in api.search(kb_id, "hotel limit per night")}
    assert_error(api.client.get(f"/api/documents/{hotels}"), 404, "not_found")
    assert [d["id"] for d in api.client.get(f"/api/kbs/{kb_id}/documents").json()] == [firmware]
