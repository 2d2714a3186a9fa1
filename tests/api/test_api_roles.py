"""Roles fail closed over HTTP, on both index backends: a search that names no role finds no
chunk or FAQ entry restricted to a role, and under an API key a search naming no role gets
the key's data roles (none when the key lists none), never every role."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from api.api_helpers import SETTLED, Api, assert_error
from api.auth_helpers import as_key, make_keys, new_key
from api.conftest import ApiFactory
from support.index_backends import SYSTEM_BACKENDS, index_uri

SALARY = b"# Salary bands\n\nSalary bands are reviewed every spring by the HR team.\n"
PAYDAY = b"# Payday\n\nSalary is paid on the last working day of every month.\n"
FAQ = "\n".join(json.dumps(row) for row in [
    {"question": "When are salary bands reviewed?", "answer": "Every spring.",
     "allowed_roles": ["hr"]},
    {"question": "When is salary paid?", "answer": "On the last working day."},
]).encode()
QUERY = "salary bands reviewed paid"
UNRESTRICTED = ({"payday.md"}, {"When is salary paid?"})
EVERYTHING = ({"salary.md", "payday.md"},
              {"When are salary bands reviewed?", "When is salary paid?"})


def _fill(api: Api, headers: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """A KB of tenant t2: an hr-only document and FAQ entry, and an unrestricted pair; its id
    and the document ids by filename."""
    client = api.client
    kb_id: str = client.post("/api/kbs", json={"name": "docs"}, headers=headers).json()["id"]
    ids: dict[str, str] = {}
    for name, body, roles in (("salary.md", SALARY, "hr"), ("payday.md", PAYDAY, "")):
        response = client.post(f"/api/kbs/{kb_id}/documents", headers=headers,
                               files=[("files", (name, body, "text/markdown"))],
                               data={"tenant_id": "t2", "allowed_roles": roles})
        assert response.status_code == 202, response.text
        for document in response.json()["documents"]:
            assert _settled(api, document["id"], headers) == "READY"
            ids[name] = document["id"]
    imported = client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)},
                           data={"tenant_id": "t2"}, headers=headers)
    assert imported.json()["added"] == 2, imported.text
    return kb_id, ids


def _settled(api: Api, document_id: str, headers: dict[str, str] | None) -> str:
    """The document's status once READY or FAILED (its last one after 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        status: str = api.client.get(f"/api/documents/{document_id}",
                                     headers=headers).json()["status"]
        if status in SETTLED or time.monotonic() > deadline:
            return status
        time.sleep(0.02)


def _found(response: Any) -> tuple[set[str], set[str]]:
    assert response.status_code == 200, response.text
    body = response.json()
    return ({hit["filename"] for hit in body["results"]},
            {hit["question"] for hit in body["faq"]})


@pytest.mark.parametrize("backend", SYSTEM_BACKENDS)
def test_a_search_naming_no_role_finds_no_role_restricted_chunk_or_faq_entry(
    make_api: ApiFactory, tmp_path: Path, backend: str
) -> None:
    api = make_api(index_uri=index_uri(backend, tmp_path / "milvus"))
    kb_id, _ = _fill(api)

    def found(**scope: Any) -> tuple[set[str], set[str]]:
        return _found(api.client.post("/api/retrieval/explain",
                                      json={"kb_id": kb_id, "query": QUERY, **scope}))

    assert found(tenant_ids=["t2"]) == UNRESTRICTED
    assert found() == UNRESTRICTED
    assert found(tenant_ids=["t2"], roles=None) == UNRESTRICTED
    assert found(tenant_ids=["t2"], roles=[]) == UNRESTRICTED
    assert found(tenant_ids=["t2"], roles=["hr"]) == EVERYTHING
    search = api.client.post("/api/retrieval/search",
                             json={"kb_id": kb_id, "query": QUERY, "tenant_ids": ["t2"]})
    assert {hit["filename"] for hit in search.json()} == {"payday.md"}


@pytest.mark.parametrize("backend", SYSTEM_BACKENDS)
def test_under_a_key_a_search_naming_no_role_gets_the_keys_roles_or_none(
    make_api: ApiFactory, tmp_path: Path, backend: str
) -> None:
    api = make_api(auth=True, index_uri=index_uri(backend, tmp_path / "milvus"))
    admin = make_keys(api).admin
    kb_id, ids = _fill(api, {"Authorization": f"Bearer {admin}"})
    roleless = new_key(api, "t2-bot", tenant_ids=("t2",))
    hr = new_key(api, "hr-bot", tenant_ids=("t2",), data_roles=("hr",))
    sales = new_key(api, "sales-bot", data_roles=("sales",))

    def found(key: str, **scope: Any) -> tuple[set[str], set[str]]:
        return _found(as_key(api, key, "POST", "/api/retrieval/explain",
                             json={"kb_id": kb_id, "query": QUERY, **scope}))

    # no data roles on the key: it may name any role, and naming none is having none
    assert found(admin) == UNRESTRICTED
    assert found(roleless) == UNRESTRICTED
    assert found(roleless, roles=["hr"]) == EVERYTHING
    # data roles on the key: naming none is having the key's roles; [] is having none
    assert found(hr) == EVERYTHING
    assert found(hr, roles=[]) == UNRESTRICTED
    assert found(sales) == UNRESTRICTED
    assert_error(as_key(api, sales, "POST", "/api/retrieval/explain",
                        json={"kb_id": kb_id, "query": QUERY, "roles": ["hr"]}),
                 403, "forbidden")
    # a key with data roles reads only the documents it could find: others are not there
    salary = f"/api/documents/{ids['salary.md']}"
    assert as_key(api, hr, "GET", salary).status_code == 200
    assert_error(as_key(api, sales, "GET", salary), 404, "not_found")
    listed = as_key(api, sales, "GET", f"/api/kbs/{kb_id}/documents").json()
    assert [d["filename"] for d in listed] == ["payday.md"]
