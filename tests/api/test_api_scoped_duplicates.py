"""REST uploads of the same bytes under tenant-bound keys: each tenant gets a document it can
find; a key held by another tenant's document is 409 and leaves that document alone."""

from __future__ import annotations

import time

import pytest

from api.api_helpers import LEAVE, Api, assert_error
from api.auth_helpers import as_key, make_keys, new_key
from api.conftest import ApiFactory
from ragsift.auth.keys import Role


@pytest.fixture
def secured(make_api: ApiFactory) -> Api:
    return make_api(auth=True)


def _upload(api: Api, secret: str, kb_id: str, name: str, data: bytes, **fields: str
            ) -> dict[str, object]:
    response = as_key(api, secret, "POST", f"/api/kbs/{kb_id}/documents",
                      files=[("files", (name, data, "text/markdown"))], data=fields)
    assert response.status_code == 202, response.text
    body: dict[str, object] = response.json()["documents"][0]
    return body


def _ready(api: Api, secret: str, document_id: object) -> None:
    deadline = time.monotonic() + 60
    while as_key(api, secret, "GET", f"/api/documents/{document_id}").json()["status"] \
            != "READY":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _found(api: Api, secret: str, kb_id: str) -> list[str]:
    response = as_key(api, secret, "POST", "/api/retrieval/search",
                      json={"kb_id": kb_id, "query": "年假", "mode": "sparse"})
    assert response.status_code == 200, response.text
    return [hit["document_id"] for hit in response.json()]


def test_each_tenant_gets_its_own_document_of_the_same_bytes(secured: Api) -> None:
    admin = make_keys(secured).admin
    kb_id: str = as_key(secured, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    t1 = new_key(secured, "t1", Role.EDITOR, tenant_ids=("t1",))
    t2 = new_key(secured, "t2", Role.EDITOR, tenant_ids=("t2",))
    first = _upload(secured, t1, kb_id, "leave.md", LEAVE)
    _ready(secured, t1, first["id"])

    second = _upload(secured, t2, kb_id, "leave.md", LEAVE, key="t2/leave.md")
    assert second["duplicate"] is False and second["id"] != first["id"]
    _ready(secured, t2, second["id"])
    assert set(_found(secured, t2, kb_id)) == {second["id"]}
    assert set(_found(secured, t1, kb_id)) == {first["id"]}

    again = _upload(secured, t2, kb_id, "copy.md", LEAVE)  # t2's own bytes again
    assert again["duplicate"] is True and again["id"] == second["id"]


def test_a_key_of_another_tenants_document_is_409_even_with_replace(secured: Api) -> None:
    admin = make_keys(secured).admin
    kb_id: str = as_key(secured, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    t1 = new_key(secured, "t1", Role.EDITOR, tenant_ids=("t1",))
    t2 = new_key(secured, "t2", Role.EDITOR, tenant_ids=("t2",))
    first = _upload(secured, t1, kb_id, "leave.md", LEAVE)
    _ready(secured, t1, first["id"])

    for data in (LEAVE, LEAVE + b"\nMore days.\n"):
        taken = as_key(secured, t2, "POST", f"/api/kbs/{kb_id}/documents",
                       files=[("files", ("leave.md", data, "text/markdown"))],
                       data={"replace": "true"})
        body = assert_error(taken, 409, "key_exists")
        assert str(first["id"]) not in str(body)  # nothing of t1's document is told
    assert _found(secured, t2, kb_id) == []
    assert set(_found(secured, t1, kb_id)) == {first["id"]}
    stored = as_key(secured, admin, "GET", f"/api/documents/{first['id']}").json()
    assert stored["status"] == "READY" and not stored["replacing"]
