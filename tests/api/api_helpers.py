"""A TestClient over a real container (e5, tantivy, SQLite on tmp data) and small helpers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi.testclient import TestClient

from ragsift.bootstrap import Container

SMALL_CHUNKS: dict[str, Any] = {"chunk_tokens": 32, "chunk_overlap_tokens": 0}
SETTLED = ("READY", "FAILED")

HOTELS = b"""# Travel policy

## Hotels

The hotel limit per night is 150 dollars in most cities. In London and Tokyo the hotel limit
per night rises to 220 dollars. Keep the itemised hotel invoice for every stay.
"""
LEAVE = """# 年假

员工每年享有十五天带薪年假。未休完的年假最多可结转五天到下一年。年假须提前一周申请。
""".encode()
FIRMWARE = b"Firmware v2.4.1 fixes error E-104 when Wi-Fi authentication fails.\n"
CORRUPT_PDF = b"%PDF-1.4\nthis is not really a pdf\n%%EOF\n"


@dataclass
class Api:
    """The client of one app and the container behind it."""

    client: TestClient
    container: Container

    def create_kb(self, name: str = "docs") -> str:
        response = self.client.post("/api/kbs", json={"name": name})
        assert response.status_code == 201, response.text
        kb_id: str = response.json()["id"]
        return kb_id

    def upload(self, kb_id: str, files: dict[str, bytes], **fields: str) -> httpx.Response:
        parts = [("files", (name, data, "application/octet-stream"))
                 for name, data in files.items()]
        return self.client.post(f"/api/kbs/{kb_id}/documents", files=parts, data=fields)

    def upload_ids(self, kb_id: str, files: dict[str, bytes], **fields: str) -> list[str]:
        response = self.upload(kb_id, files, **fields)
        assert response.status_code == 202, response.text
        return [d["id"] for d in response.json()["documents"]]

    def wait_settled(self, document_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """Poll the document until it is READY or FAILED."""
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.client.get(f"/api/documents/{document_id}")
            if response.status_code == 429:  # polling past a key's request rate: as a client
                assert time.monotonic() < deadline, response.text
                time.sleep(float(response.headers.get("Retry-After", "0.1")))
                continue
            assert response.status_code == 200, response.text
            document: dict[str, Any] = response.json()
            if document["status"] in SETTLED:
                return document
            assert time.monotonic() < deadline, f"still {document['status']} after {timeout_s}s"
            time.sleep(0.02)

    def ingest(self, kb_id: str, files: dict[str, bytes]) -> list[str]:
        """Upload and wait until every document is READY."""
        ids = self.upload_ids(kb_id, files)
        for document_id in ids:
            assert self.wait_settled(document_id)["status"] == "READY"
        return ids

    def search(self, kb_id: str, query: str, **options: Any) -> list[dict[str, Any]]:
        response = self.client.post(
            "/api/retrieval/search", json={"kb_id": kb_id, "query": query, **options}
        )
        assert response.status_code == 200, response.text
        hits: list[dict[str, Any]] = response.json()
        return hits


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is a JSON error with this status and code (and a message)."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    return body
