"""Health, readiness, metrics, the OpenAPI document, and errors that are not the caller's."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from api.api_helpers import HOTELS, Api, assert_error
from api.conftest import ApiFactory


def test_healthz_and_readyz_answer_ok(api: Api) -> None:
    assert api.client.get("/healthz").json() == {"status": "ok"}
    ready = api.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "checks": {
        "database": "ok", "index": "ok", "faq_index": "ok"}}


def test_readyz_fails_with_503_when_the_database_is_unreachable(
    api: Api, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable() -> None:
        raise OperationalError("SELECT 1", {}, Exception("unable to open database file"))

    monkeypatch.setattr(api.container.repository, "ping", unreachable)

    response = api.client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert "unable to open database file" in body["checks"]["database"]
    assert body["checks"]["index"] == "ok"


def test_metrics_count_requests_per_route_and_time_retrieval_stages(api: Api) -> None:
    kb_id = api.create_kb()
    api.ingest(kb_id, {"hotels.md": HOTELS})
    api.search(kb_id, "hotel limit per night")
    api.client.get("/api/documents/nope")

    response = api.client.get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert ('ragsift_http_requests_total{method="POST",route="/api/retrieval/search",'
            'status="200"} 1.0') in text
    assert ('ragsift_http_requests_total{method="GET",route="/api/documents/{document_id}",'
            'status="404"} 1.0') in text
    assert 'ragsift_http_request_duration_seconds_count{method="POST",route="/api/kbs"}' in text
    for stage in ("channels", "fusion", "ready_check", "total"):
        assert f'ragsift_retrieval_stage_duration_seconds_count{{stage="{stage}"}} 1.0' in text
    assert 'ragsift_ingestion_documents_total{status="READY"} 1.0' in text


def test_each_app_has_its_own_metrics(make_api: ApiFactory) -> None:
    first, second = make_api(), make_api()
    first.client.get("/healthz")
    assert 'route="/healthz"' in first.client.get("/metrics").text
    assert 'route="/healthz"' not in second.client.get("/metrics").text


def test_an_unexpected_error_is_a_json_500_not_a_traceback(
    api: Api, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(api.container.repository, "list_kbs", broken)

    body = assert_error(api.client.get("/api/kbs"), 500, "internal_error")
    assert "boom" not in body["message"]
    assert 'route="/api/kbs",status="500"' in api.client.get("/metrics").text


def test_routing_errors_are_json_with_a_code(api: Api) -> None:
    assert_error(api.client.get("/no/such/route"), 404, "not_found")
    response = assert_error(api.client.put("/api/kbs"), 405, "method_not_allowed")
    assert response


def test_the_openapi_document_lists_every_route(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    assert {"/api/kbs", "/api/kbs/{kb_id}", "/api/kbs/{kb_id}/documents",
            "/api/documents/{document_id}", "/api/documents/{document_id}/reindex",
            "/api/kbs/{kb_id}/faq", "/api/retrieval/search", "/api/retrieval/explain",
            "/healthz", "/readyz", "/metrics"} <= set(paths)
    upload = paths["/api/kbs/{kb_id}/documents"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    assert {"/api/keys", "/api/audit"} <= set(paths)
    # Swagger UI loads its assets from a CDN: off unless RAGSIFT_API_DOCS=true
    assert api.client.get("/docs").status_code == 404
