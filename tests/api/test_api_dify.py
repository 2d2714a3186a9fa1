"""Dify's External Knowledge API (`POST /dify/retrieval`) against a live `ragsift serve` with
keys on: the request and record shapes, the normalised score and its threshold, metadata
conditions as filters (every operator, on any metadata field; unknown ones refused), the
key's scope, and each of Dify's error codes.

There is no Dify client library: the contract is checked with httpx, field by field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from api.api_helpers import FIRMWARE, HOTELS, LEAVE
from api.conftest import open_api
from api.serve_helpers import create_key, serving_with_keys

# each document with its own scope, so every filter can be seen in which documents come back
# and its own metadata (the upload form's `metadata` field)
FILES: dict[str, tuple[bytes, dict[str, str]]] = {
    "hotels.md": (HOTELS, {"tenant_id": "acme", "dataset_id": "travel",
                           "visibility": "public", "source": "wiki", "metadata": json.dumps(
                               {"category": "travel", "year": 2024, "code": "TR-100",
                                "issued": {"$date": "2024-03-01"}})}),
    "leave.md": (LEAVE, {"tenant_id": "globex", "dataset_id": "hr",
                         "visibility": "internal", "source": "handbook", "metadata": json.dumps(
                             {"category": "hr", "year": 2023, "code": "HR-7",
                              "issued": {"$date": "2023-06-15"}})}),
    "firmware.txt": (FIRMWARE, {"tenant_id": "acme", "dataset_id": "support",
                                "visibility": "internal", "source": "tickets"}),
}
QUERY = "hotel limit per night"


@dataclass
class Dify:
    url: str
    kb_id: str
    documents: dict[str, str]  # filename -> document id
    reader: str  # a reader key over all data
    other_only: str  # a reader key for KB "other" only
    acme: str  # a reader key for tenant acme only

    def retrieve(self, key: str | None, body: dict[str, Any],
                 headers: dict[str, str] | None = None) -> httpx.Response:
        sent = dict(headers or {})
        if key is not None:
            sent["Authorization"] = f"Bearer {key}"
        return httpx.post(f"{self.url}/dify/retrieval", json=body, headers=sent, timeout=30)

    def records(self, key: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        response = self.retrieve(key, body)
        assert response.status_code == 200, response.text
        assert list(response.json()) == ["records"]
        records: list[dict[str, Any]] = response.json()["records"]
        return records

    def filenames(self, key: str, body: dict[str, Any]) -> set[str]:
        return {record["title"] for record in self.records(key, body)}


def request(knowledge_id: str = "docs", top_k: int = 10, threshold: float = 0.0,
            **extra: Any) -> dict[str, Any]:
    return {"knowledge_id": knowledge_id, "query": QUERY,
            "retrieval_setting": {"top_k": top_k, "score_threshold": threshold}, **extra}


def where(*conditions: dict[str, Any], logical_operator: str = "and") -> dict[str, Any]:
    return request(metadata_condition={"logical_operator": logical_operator,
                                       "conditions": list(conditions)})


def condition(name: str | list[str], operator: str, value: Any = None) -> dict[str, Any]:
    return {"name": name, "comparison_operator": operator, "value": value}


@pytest.fixture(scope="module")
def dify(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dify]:
    root = tmp_path_factory.mktemp("dify")
    data = root / "data"
    documents: dict[str, str] = {}
    with open_api(data) as api:
        kb_id = api.create_kb("docs")
        api.create_kb("other")
        for filename, (content, scope) in FILES.items():
            [document_id] = api.upload_ids(kb_id, {filename: content}, **scope)
            assert api.wait_settled(document_id)["status"] == "READY"
            documents[filename] = document_id
    keys = (create_key(data, "dify"), create_key(data, "other-only", "--kb", "other"),
            create_key(data, "acme", "--tenant-id", "acme"))
    with serving_with_keys(data, root / "server.log", RAGSIFT_REWRITE="false") as url:
        yield Dify(url, kb_id, documents, *keys)


def test_records_have_difys_fields_and_metadata_is_always_an_object(dify: Dify) -> None:
    records = dify.records(dify.reader, request(top_k=3))

    assert 1 <= len(records) <= 3
    for record in records:
        assert set(record) == {"content", "score", "title", "metadata"}
        assert isinstance(record["content"], str) and record["content"]
        assert 0.0 <= record["score"] <= 1.0
        assert record["title"] in FILES
        metadata = record["metadata"]
        assert isinstance(metadata, dict)
        assert metadata["document_id"] == dify.documents[record["title"]]
        assert metadata["filename"] == record["title"]
        assert isinstance(metadata["chunk_id"], str) and metadata["chunk_id"]
        assert isinstance(metadata["locator"], dict)
        assert isinstance(metadata["heading_path"], list)
    assert records[0]["title"] == "hotels.md"
    assert records[0]["metadata"]["heading_path"] == ["Travel policy", "Hotels"]
    assert "150 dollars" in records[0]["content"]


def test_the_knowledge_id_may_be_the_kb_id_or_its_name(dify: Dify) -> None:
    by_name = dify.records(dify.reader, request("docs", top_k=3))
    by_id = dify.records(dify.reader, request(dify.kb_id, top_k=3))

    assert [r["metadata"]["chunk_id"] for r in by_id] == \
        [r["metadata"]["chunk_id"] for r in by_name]


def test_scores_never_rise_down_the_ranking_so_dify_keeps_ragsifts_order(dify: Dify) -> None:
    records = dify.records(dify.reader, request(top_k=10))

    assert len(records) == 5  # every chunk of the three documents
    scores = [record["score"] for record in records]
    assert scores == sorted(scores, reverse=True)
    assert [r["metadata"]["rank"] for r in records] == list(range(1, 6))


def test_score_threshold_keeps_exactly_the_records_at_or_above_it(dify: Dify) -> None:
    everything = dify.records(dify.reader, request(top_k=10))
    scores = sorted({record["score"] for record in everything}, reverse=True)
    assert len(scores) >= 2, scores
    threshold = scores[1]  # keeps the top two score levels, drops the rest

    kept = dify.records(dify.reader, request(top_k=10, threshold=threshold))

    assert kept == [record for record in everything if record["score"] >= threshold]
    assert 0 < len(kept) < len(everything)
    assert dify.records(dify.reader, request(top_k=10, threshold=1.0)) == \
        [record for record in everything if record["score"] >= 1.0]


def test_top_k_bounds_the_number_of_records(dify: Dify) -> None:
    assert len(dify.records(dify.reader, request(top_k=2))) == 2


def test_metadata_conditions_become_scope_filters(dify: Dify) -> None:
    names = dify.filenames
    key = dify.reader

    assert names(key, where(condition("tenant_id", "is", "acme"))) == \
        {"hotels.md", "firmware.txt"}
    assert names(key, where(condition("dataset_id", "in", ["hr", "support"]))) == \
        {"leave.md", "firmware.txt"}
    assert names(key, where(condition("tenant_id", "=", "acme"),
                            condition("visibility", "is", "internal"))) == {"firmware.txt"}
    assert names(key, where(condition("source", "is", "wiki"),
                            condition("source", "is", "handbook"),
                            logical_operator="or")) == {"hotels.md", "leave.md"}
    assert names(key, where(condition(["document_id"], "is",
                                      dify.documents["leave.md"]))) == {"leave.md"}
    assert names(key, where(condition("filename", "in", ["firmware.txt", "leave.md"]))) == \
        {"firmware.txt", "leave.md"}
    # two values of one field ANDed accept nothing: no records, not an error
    assert dify.records(key, where(condition("tenant_id", "is", "acme"),
                                   condition("tenant_id", "is", "globex"))) == []
    # Dify sends metadata_condition: null when there is none
    assert len(dify.records(key, request(top_k=10, metadata_condition=None))) == 5


def test_difys_operators_filter_on_any_metadata_field(dify: Dify) -> None:
    names, key = dify.filenames, dify.reader

    # the request shape of Dify's documentation: name a list of one, a string value
    assert names(key, where(condition(["category"], "is", "hr"))) == {"leave.md"}
    assert names(key, where(condition("year", "≥", "2024"))) == {"hotels.md"}
    assert names(key, where(condition("code", "start with", "TR"),
                            condition("code", "end with", "-7"),
                            logical_operator="or")) == {"hotels.md", "leave.md"}
    assert names(key, where(condition("issued", "before", 1700000000))) == {"leave.md"}
    assert names(key, where(condition("issued", "after", "2024-01-01"))) == {"hotels.md"}
    # `or` across a metadata key, a scope field and the file name
    assert names(key, where(condition("category", "contains", "trav"),
                            condition("source", "is not", "wiki"),
                            condition("document_name", "is", "leave.md"),
                            logical_operator="or")) == {"hotels.md", "leave.md", "firmware.txt"}
    # Dify sends null for the value of empty / not empty, and a null logical_operator
    assert names(key, request(metadata_condition={"logical_operator": None, "conditions": [
        {"name": ["category"], "comparison_operator": "empty", "value": None}]})) == \
        {"firmware.txt"}
    records = dify.records(key, where(condition("category", "not empty")))
    assert {r["title"]: r["metadata"]["document_metadata"]["year"] for r in records} == \
        {"hotels.md": 2024, "leave.md": 2023}


@pytest.mark.parametrize(("body", "named"), [
    (where(condition("tenant_id", "between", "ac")), "'between'"),
    (where(condition("category", "is", ["travel", "hr"])), "'in'"),
    (where(condition("issued", "before", "next week")), "Unix timestamp"),
])
def test_an_unknown_or_malformed_condition_is_refused_naming_it(
    dify: Dify, body: dict[str, Any], named: str,
) -> None:
    response = dify.retrieve(dify.reader, body)

    assert response.status_code == 400
    assert response.json()["error_code"] == 3001
    assert named in response.json()["error_msg"]


def test_the_keys_scope_is_a_ceiling_conditions_narrow_it_never_widen_it(dify: Dify) -> None:
    assert dify.filenames(dify.acme, request(top_k=10)) == {"hotels.md", "firmware.txt"}
    assert dify.filenames(dify.acme, where(condition("dataset_id", "is", "support"))) == \
        {"firmware.txt"}

    outside = dify.retrieve(dify.acme, where(condition("tenant_id", "is", "globex")))

    assert outside.status_code == 403
    assert outside.json()["error_code"] == 1002


def _error(response: httpx.Response, status: int, code: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "error_msg"}, body
    assert body["error_code"] == code
    assert isinstance(body["error_msg"], str) and body["error_msg"]
    message: str = body["error_msg"]
    return message


def test_a_missing_or_malformed_authorization_header_is_1001(dify: Dify) -> None:
    _error(dify.retrieve(None, request()), 403, 1001)
    _error(dify.retrieve(None, request(), {"Authorization": f"Basic {dify.reader}"}), 403, 1001)
    _error(dify.retrieve(None, request(), {"Authorization": "Bearer"}), 403, 1001)


def test_an_unknown_key_or_a_knowledge_base_outside_the_key_is_1002(dify: Dify) -> None:
    _error(dify.retrieve("rs_not-a-real-key", request()), 403, 1002)
    message = _error(dify.retrieve(dify.other_only, request()), 403, 1002)
    assert "other-only" in message


def test_a_knowledge_base_that_does_not_exist_is_2001(dify: Dify) -> None:
    message = _error(dify.retrieve(dify.reader, request("no-such-kb")), 404, 2001)
    assert "no-such-kb" in message


def test_an_invalid_request_is_an_error_in_difys_format(dify: Dify) -> None:
    _error(dify.retrieve(dify.reader, request(threshold=1.5)), 400, 3001)
    _error(dify.retrieve(dify.reader, {"knowledge_id": "docs", "query": QUERY}), 400, 3001)


def test_other_routes_keep_ragsifts_own_error_format(dify: Dify) -> None:
    response = httpx.get(f"{dify.url}/api/kbs", timeout=10)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_the_openapi_document_describes_the_route_with_bearer_auth(dify: Dify) -> None:
    spec = httpx.get(f"{dify.url}/openapi.json", timeout=10).json()
    operation = spec["paths"]["/dify/retrieval"]["post"]

    assert operation["security"] == [{"bearerAuth": []}]
    assert operation["x-required-role"] == "reader"
    body_ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = spec["components"]["schemas"][body_ref.rsplit("/", 1)[1]]
    assert set(body["required"]) == {"knowledge_id", "query", "retrieval_setting"}
    assert "403" in operation["responses"] and "404" in operation["responses"]
