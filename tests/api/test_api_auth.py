"""Access control: every /api route needs a key; roles, KBs and scopes are enforced."""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import pytest

from api.api_helpers import HOTELS, LEAVE, Api, assert_error
from api.auth_helpers import as_key, bearer, make_keys, new_key
from api.conftest import ApiFactory
from ragsift.auth.keys import Role
from ragsift.auth.service import KeyService

_SAMPLE = {"kb_id": "k", "document_id": "d", "conversation_id": "c", "seq": "1", "name": "n"}


@pytest.fixture
def secured(make_api: ApiFactory) -> Api:
    # room for the many refused requests some tests make on purpose
    return make_api(auth=True, bad_key_burst=1000)


def _operations(api: Api) -> list[tuple[str, str, dict[str, Any]]]:
    spec = api.client.get("/openapi.json").json()
    return [(method.upper(), path, operation) for path, item in spec["paths"].items()
            for method, operation in item.items()]


def test_every_api_route_in_the_openapi_document_rejects_a_missing_key(secured: Api) -> None:
    operations = [op for op in _operations(secured) if op[1].startswith("/api/")]
    assert len(operations) >= 30
    for method, path, operation in operations:
        url = re.sub(r"\{(\w+)\}", lambda m: _SAMPLE.get(m.group(1), "x"), path)
        response = secured.client.request(method, url, json={})
        assert response.status_code == 401, (method, path, response.text)
        assert response.headers["www-authenticate"] == "Bearer"
        assert operation["security"] == [{"bearerAuth": []}]
        assert operation["x-required-role"] in ("reader", "editor", "admin")


def test_the_openapi_document_declares_the_bearer_scheme_and_open_health(secured: Api) -> None:
    spec = secured.client.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert spec["paths"]["/healthz"]["get"]["x-required-role"] == "none"
    assert secured.client.get("/healthz").status_code == 200
    assert secured.client.get("/readyz").status_code == 200
    assert secured.client.get("/metrics").status_code == 401


def test_each_role_reaches_its_route_classes_and_no_more(secured: Api) -> None:
    keys = make_keys(secured)
    assert as_key(secured, keys.reader, "POST", "/api/kbs", json={"name": "x"}).status_code == 403
    assert as_key(secured, keys.editor, "POST", "/api/kbs", json={"name": "x"}).status_code == 403
    created = as_key(secured, keys.admin, "POST", "/api/kbs", json={"name": "docs"})
    assert created.status_code == 201
    kb_id = created.json()["id"]
    upload = [("files", ("hotels.md", HOTELS, "text/markdown"))]
    denied = as_key(secured, keys.reader, "POST", f"/api/kbs/{kb_id}/documents", files=upload)
    assert_error(denied, 403, "forbidden")
    accepted = as_key(secured, keys.editor, "POST", f"/api/kbs/{kb_id}/documents", files=upload)
    assert accepted.status_code == 202
    document_id = accepted.json()["documents"][0]["id"]
    assert secured.container.ingestion is not None
    search = {"kb_id": kb_id, "query": "hotel limit"}
    for secret in (keys.reader, keys.editor, keys.admin):
        assert as_key(secured, secret, "POST", "/api/retrieval/search", json=search).status_code \
            == 200
        assert as_key(secured, secret, "GET", f"/api/documents/{document_id}").status_code == 200
    for secret, status in ((keys.reader, 403), (keys.editor, 403), (keys.admin, 200)):
        assert as_key(secured, secret, "GET", "/api/keys").status_code == status
        assert as_key(secured, secret, "GET", f"/api/kbs/{kb_id}/versions").status_code == status
        assert as_key(secured, secret, "GET", "/metrics").status_code == status
    for secret, status in ((keys.reader, 403), (keys.editor, 204)):
        assert as_key(secured, secret, "DELETE", f"/api/documents/{document_id}").status_code \
            == status


@pytest.mark.parametrize("header", [
    "Bearer rs_short",
    "Bearer xx_" + "a" * 43,
    "Bearer  rs_" + "a" * 43,
    "rs_" + "a" * 43,
    "Basic cnM6eA==",
])
def test_malformed_keys_are_refused_with_401(secured: Api, header: str) -> None:
    response = secured.client.get("/api/kbs", headers={"Authorization": header})
    assert_error(response, 401, "unauthorized")


def test_a_valid_key_with_whitespace_or_truncated_is_refused(secured: Api) -> None:
    secret = make_keys(secured).admin
    for bad in (secret + " ", secret[:-1], " " + secret):
        response = secured.client.get("/api/kbs", headers={"Authorization": f"Bearer {bad}"})
        assert response.status_code == 401, bad


def test_a_key_in_the_query_string_is_refused_even_when_valid(secured: Api) -> None:
    secret = make_keys(secured).admin
    response = secured.client.get(f"/api/kbs?api_key={secret}", headers=bearer(secret))
    assert_error(response, 401, "unauthorized")
    assert "never in the URL" in response.json()["message"]


def test_revoked_rotated_and_expired_keys_stop_working(secured: Api) -> None:
    keys = KeyService(secured.container.repository)
    _, revoked = keys.create("gone", Role.ADMIN)
    _, rotated = keys.create("turned", Role.ADMIN)
    assert as_key(secured, revoked, "GET", "/api/kbs").status_code == 200
    keys.revoke("gone")
    assert as_key(secured, revoked, "GET", "/api/kbs").status_code == 401
    _, fresh = keys.rotate("turned")
    assert as_key(secured, rotated, "GET", "/api/kbs").status_code == 401
    assert as_key(secured, fresh, "GET", "/api/kbs").status_code == 200
    from datetime import UTC, datetime, timedelta
    past = KeyService(secured.container.repository,
                      clock=lambda: datetime.now(UTC) - timedelta(days=2))
    _, expired = past.create("old", Role.ADMIN, expires_in=timedelta(days=1))
    assert as_key(secured, expired, "GET", "/api/kbs").status_code == 401


def test_two_admins_revoking_one_key_at_once_both_succeed_and_it_is_revoked(
    secured: Api,
) -> None:
    keys = make_keys(secured)
    KeyService(secured.container.repository).create("victim", Role.READER)
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def revoke() -> None:
        barrier.wait()
        statuses.append(as_key(secured, keys.admin, "POST", "/api/keys/victim/revoke").status_code)

    threads = [threading.Thread(target=revoke) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200, 200]
    listed = {k["name"]: k for k in as_key(secured, keys.admin, "GET", "/api/keys").json()}
    assert listed["victim"]["revoked_at"] is not None
    assert "secret" not in str(listed) and "secret_hash" not in str(listed)


def test_keys_are_created_and_rotated_over_rest_with_the_secret_shown_once(secured: Api) -> None:
    admin = make_keys(secured).admin
    created = as_key(secured, admin, "POST", "/api/keys",
                     json={"name": "ci", "role": "editor", "expires_in": "90d"})
    assert created.status_code == 201, created.text
    secret = created.json()["secret"]
    assert secret.startswith("rs_") and len(secret) == 46
    assert as_key(secured, secret, "GET", "/api/kbs").status_code == 200
    assert secret not in as_key(secured, admin, "GET", "/api/keys").text
    rotated = as_key(secured, admin, "POST", "/api/keys/ci/rotate").json()["secret"]
    assert as_key(secured, secret, "GET", "/api/kbs").status_code == 401
    assert as_key(secured, rotated, "GET", "/api/kbs").status_code == 200


def test_a_key_limited_to_one_kb_sees_and_searches_only_that_kb(secured: Api) -> None:
    admin = make_keys(secured).admin
    ids = {name: as_key(secured, admin, "POST", "/api/kbs", json={"name": name}).json()["id"]
           for name in ("mine", "theirs")}
    reader = new_key(secured, "narrow", kb_ids=(ids["mine"],))
    listed = as_key(secured, reader, "GET", "/api/kbs").json()
    assert [kb["name"] for kb in listed] == ["mine"]
    search = {"kb_id": ids["theirs"], "query": "hotel"}
    assert_error(as_key(secured, reader, "POST", "/api/retrieval/search", json=search),
                 403, "forbidden")
    assert as_key(secured, reader, "GET", f"/api/kbs/{ids['theirs']}").status_code == 403
    chat = {"kb_id": ids["theirs"], "message": "hotel?"}
    assert as_key(secured, reader, "POST", "/api/chat", json=chat).status_code == 403
    # several KBs in one request: each must be within the key's scope
    both = {"kbs": [ids["mine"], "theirs"], "query": "hotel"}
    assert_error(as_key(secured, reader, "POST", "/api/retrieval/search", json=both),
                 403, "forbidden")
    chat = {"kbs": ["mine", ids["theirs"]], "message": "hotel?"}
    assert as_key(secured, reader, "POST", "/api/chat", json=chat).status_code == 403
    mine = as_key(secured, reader, "POST", "/api/retrieval/search",
                  json={"kbs": ["mine"], "query": "hotel"})
    assert mine.status_code == 200, mine.text


def _ingest_scoped(api: Api, admin: str) -> str:
    kb_id: str = as_key(api, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    for tenant, data in (("t1", HOTELS), ("t2", LEAVE)):
        response = as_key(api, admin, "POST", f"/api/kbs/{kb_id}/documents",
                          files=[("files", (f"{tenant}.md", data, "text/markdown"))],
                          data={"tenant_id": tenant})
        assert response.status_code == 202, response.text
        document_id = response.json()["documents"][0]["id"]
        api.container.ingestion  # noqa: B018 - the worker ingests in the background
        _wait_ready(api, admin, document_id)
    return kb_id


def _wait_ready(api: Api, secret: str, document_id: str) -> None:
    import time
    deadline = time.monotonic() + 60
    while as_key(api, secret, "GET", f"/api/documents/{document_id}").json()["status"] \
            != "READY":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_the_keys_tenant_scope_is_a_ceiling_a_request_can_narrow_but_not_widen(
    secured: Api,
) -> None:
    admin = make_keys(secured).admin
    kb_id = _ingest_scoped(secured, admin)
    reader = new_key(secured, "tenant1", tenant_ids=("t1",))
    search = {"kb_id": kb_id, "query": "hotel limit 年假", "top_k": 10, "mode": "sparse"}
    hits = as_key(secured, reader, "POST", "/api/retrieval/search", json=search).json()
    assert hits and {hit["filename"] for hit in hits} == {"t1.md"}
    narrowed = as_key(secured, reader, "POST", "/api/retrieval/search",
                      json={**search, "tenant_ids": ["t1"]})
    assert {hit["filename"] for hit in narrowed.json()} == {"t1.md"}
    widened = as_key(secured, reader, "POST", "/api/retrieval/search",
                     json={**search, "tenant_ids": ["t1", "t2"]})
    assert_error(widened, 403, "forbidden")
    assert "'t2'" in widened.json()["message"]
    everyone = as_key(secured, admin, "POST", "/api/retrieval/search", json=search).json()
    assert {hit["filename"] for hit in everyone} == {"t1.md", "t2.md"}
    chat = as_key(secured, reader, "POST", "/api/chat",
                  json={"kb_id": kb_id, "message": "hotel limit 年假"}).json()
    assert {e["filename"] for e in chat["evidence"]} <= {"t1.md"}


def test_conversations_belong_to_the_key_that_created_them(secured: Api) -> None:
    admin = make_keys(secured).admin
    kb_id = as_key(secured, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    alice, bob = new_key(secured, "alice"), new_key(secured, "bob")
    started = as_key(secured, alice, "POST", "/api/chat", json={"kb_id": kb_id, "message": "hi"})
    assert started.status_code == 200, started.text
    conversation = started.json()["conversation_id"]
    assert [c["id"] for c in as_key(secured, alice, "GET", "/api/conversations").json()] == [
        conversation]
    assert as_key(secured, bob, "GET", "/api/conversations").json() == []
    assert as_key(secured, bob, "GET", f"/api/conversations/{conversation}").status_code == 404
    assert as_key(secured, bob, "DELETE", f"/api/conversations/{conversation}").status_code \
        == 404
    follow = {"kb_id": kb_id, "message": "again", "conversation_id": conversation}
    assert as_key(secured, bob, "POST", "/api/chat", json=follow).status_code == 404
    assert as_key(secured, alice, "DELETE", f"/api/conversations/{conversation}").status_code \
        == 204


def test_a_key_over_its_rate_gets_429_with_retry_after_counted_by_name(
    make_api: ApiFactory,
) -> None:
    api = make_api(auth=True, key_rate_per_s=0.01, key_burst=3)
    admin = make_keys(api).admin
    statuses = [as_key(api, admin, "GET", "/api/kbs").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = as_key(api, admin, "GET", "/api/kbs")
    assert_error(limited, 429, "rate_limited")
    assert int(limited.headers["retry-after"]) >= 1
    metrics = api.client.app.state.ragsift.metrics.render()[0].decode()  # type: ignore[attr-defined]
    assert 'ragsift_key_requests_total{key="admin",outcome="rate_limited"} 2.0' in metrics
    assert admin not in metrics


def test_ten_thousand_bad_keys_are_rate_limited_and_logged_once_per_interval(
    make_api: ApiFactory, caplog: pytest.LogCaptureFixture,
) -> None:
    secured = make_api(auth=True)
    caplog.set_level(logging.WARNING, logger="ragsift.api.auth")
    started = time.monotonic()
    statuses = [secured.client.get("/api/kbs", headers=bearer("rs_" + f"{i:043d}")).status_code
                for i in range(10_000)]
    elapsed = time.monotonic() - started
    assert statuses[:20] == [401] * 20
    assert statuses.count(429) > 9_000
    warnings = [r for r in caplog.records if "bad API key" in r.getMessage()]
    # one line per 10 s interval, however long 10,000 requests take on this machine
    assert 1 <= len(warnings) <= 1 + int(elapsed // 10)


def test_state_changing_requests_are_audited_with_the_key_name(secured: Api) -> None:
    keys = make_keys(secured)
    kb_id = as_key(secured, keys.admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    as_key(secured, keys.reader, "DELETE", f"/api/kbs/{kb_id}")  # refused, still recorded
    as_key(secured, keys.admin, "DELETE", f"/api/kbs/{kb_id}")
    as_key(secured, keys.admin, "POST", "/api/retrieval/search", json={"kb_id": "x", "query": "q"})
    entries = as_key(secured, keys.admin, "GET", "/api/audit", params={"since": "1h"}).json()
    seen = [(e["key_name"], e["method"], e["route"], e["target"], e["status"]) for e in entries]
    assert seen == [
        ("admin", "POST", "/api/kbs", None, 201),
        ("reader", "DELETE", "/api/kbs/{kb_id}", f"kb_id={kb_id}", 403),
        ("admin", "DELETE", "/api/kbs/{kb_id}", f"kb_id={kb_id}", 204),
    ]


def test_no_cors_headers_unless_origins_are_configured(make_api: ApiFactory) -> None:
    closed = make_api(auth=True)
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    answer = closed.client.options("/api/retrieval/search", headers=preflight)
    assert "access-control-allow-origin" not in answer.headers
    opened = make_api(auth=True, cors_origins="https://app.example")
    answer = opened.client.options("/api/retrieval/search", headers=preflight)
    assert answer.headers["access-control-allow-origin"] == "https://app.example"
    other = opened.client.options("/api/retrieval/search",
                                  headers={**preflight, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_a_cross_site_post_is_refused_even_with_auth_off(make_api: ApiFactory) -> None:
    api = make_api(auth=False)
    form = {"name": "evil"}
    evil = api.client.post("/api/kbs", json=form, headers={"Origin": "https://evil.example"})
    assert_error(evil, 403, "forbidden")
    upload = api.client.post("/api/kbs/x/documents", headers={"Sec-Fetch-Site": "cross-site"},
                             files=[("files", ("a.md", b"# a", "text/markdown"))])
    assert_error(upload, 403, "forbidden")
    same = api.client.post("/api/kbs", json=form, headers={"Origin": "http://testserver"})
    assert same.status_code == 201, same.text
    assert api.client.post("/api/kbs", json={"name": "plain"}).status_code == 201  # curl, SDKs
    allowed = make_api(auth=False, cors_origins="https://app.example")
    ok = allowed.client.post("/api/kbs", json=form, headers={"Origin": "https://app.example"})
    assert ok.status_code == 201


def test_a_scoped_key_writes_and_reaches_only_documents_within_its_scope(secured: Api) -> None:
    admin = make_keys(secured).admin
    kb_id = _ingest_scoped(secured, admin)  # t1.md in tenant t1, t2.md in tenant t2
    editor = new_key(secured, "t1-editor", Role.EDITOR, tenant_ids=("t1",))
    upload = [("files", ("more.md", b"# more\n\nhotel limits again\n", "text/markdown"))]
    outside = as_key(secured, editor, "POST", f"/api/kbs/{kb_id}/documents", files=upload,
                     data={"tenant_id": "t2"})
    assert_error(outside, 403, "forbidden")
    inside = as_key(secured, editor, "POST", f"/api/kbs/{kb_id}/documents", files=upload)
    assert inside.status_code == 202, inside.text
    document_id = inside.json()["documents"][0]["id"]
    _wait_ready(secured, admin, document_id)
    stored = as_key(secured, admin, "GET", f"/api/documents/{document_id}").json()
    assert stored["scope"]["tenant_id"] == "t1"  # filled in from the key's one tenant
    listed = as_key(secured, admin, "GET", f"/api/kbs/{kb_id}/documents").json()
    theirs = next(d for d in listed if d["filename"] == "t2.md")
    for method in ("GET", "DELETE"):
        hidden = as_key(secured, editor, method, f"/api/documents/{theirs['id']}")
        assert hidden.status_code == 404, (method, hidden.text)
    seen = as_key(secured, editor, "GET", f"/api/kbs/{kb_id}/documents").json()
    assert {d["filename"] for d in seen} == {"t1.md", "more.md"}


def test_a_kbs_conversations_route_shows_each_key_only_its_own(secured: Api) -> None:
    admin = make_keys(secured).admin
    kb_id = as_key(secured, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    alice, bob = new_key(secured, "alice"), new_key(secured, "bob")
    started = as_key(secured, alice, "POST", "/api/chat",
                     json={"kb_id": kb_id, "message": "hotel limit"})
    conversation = started.json()["conversation_id"]
    route = f"/api/kbs/{kb_id}/conversations"

    assert [c["id"] for c in as_key(secured, alice, "GET", route).json()] == [conversation]
    assert as_key(secured, bob, "GET", route).json() == []
    assert as_key(secured, bob, "GET", f"{route}/{conversation}").status_code == 404
    assert as_key(secured, bob, "DELETE", f"{route}/{conversation}").status_code == 404
    assert as_key(secured, alice, "DELETE", f"{route}/{conversation}").status_code == 204
