"""Retrieval over HTTP: search (plain hits array), explain (results, faq, trace), errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.api_helpers import FIRMWARE, HOTELS, LEAVE, Api, assert_error
from api.conftest import open_api
from support.serve import free_port


@pytest.fixture(scope="module")
def ready(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str, dict[str, str]]]:
    """One app for the module whose KB "docs" holds three READY documents; ids by filename."""
    with open_api(tmp_path_factory.mktemp("retrieval")) as api:
        kb_id = api.create_kb("docs")
        files = {"hotels.md": HOTELS, "leave.md": LEAVE, "firmware.txt": FIRMWARE}
        ids = api.ingest(kb_id, files)
        yield api, kb_id, dict(zip(files, ids, strict=True))


def test_search_returns_the_plain_array_of_hits(ready: tuple[Api, str, dict[str, str]]) -> None:
    api, kb_id, ids = ready
    hits = api.search(kb_id, "hotel limit per night", top_k=2)

    assert isinstance(hits, list) and 1 <= len(hits) <= 2
    top = hits[0]
    assert top["document_id"] == ids["hotels.md"]
    assert top["filename"] == "hotels.md"
    assert top["rank"] == 1
    assert {"chunk_id", "text", "dense_score", "sparse_score", "fusion_score",
            "retrieval_sources", "locator", "heading_path"} <= set(top)


@pytest.mark.parametrize("fusion", ["zscore", "weighted", "rrf"])
def test_every_hit_of_search_and_explain_carries_a_relevance_in_0_1_monotone_in_the_fused_score(
    ready: tuple[Api, str, dict[str, str]], fusion: str,
) -> None:
    api, kb_id, _ = ready
    body = {"kb_id": kb_id, "query": "hotel limit per night", "top_k": 5, "fusion": fusion}
    searched = api.client.post("/api/retrieval/search", json=body).json()
    explained = api.client.post("/api/retrieval/explain", json=body).json()["results"]

    for hits in (searched, explained):
        assert len(hits) >= 2
        assert all(0.0 <= hit["relevance"] <= 1.0 for hit in hits)
        by_fused = sorted(hits, key=lambda hit: hit["fusion_score"])
        relevance = [hit["relevance"] for hit in by_fused]
        assert relevance == sorted(relevance)
    # the raw scores stay
    assert all(isinstance(hit["fusion_score"], float) for hit in searched)


def test_search_by_knowledge_base_name_with_overrides(
    ready: tuple[Api, str, dict[str, str]],
) -> None:
    api, _, ids = ready
    response = api.client.post("/api/retrieval/search", json={
        "kb": "docs", "query": "error E-104", "mode": "sparse", "top_k": 1,
        "document_ids": [ids["firmware.txt"]], "small2big": False,
    })
    assert response.status_code == 200, response.text
    [hit] = response.json()
    assert hit["document_id"] == ids["firmware.txt"]
    assert hit["dense_rank"] is None and hit["sparse_rank"] == 1


def test_explain_returns_results_faq_and_the_trace(
    ready: tuple[Api, str, dict[str, str]],
) -> None:
    api, kb_id, ids = ready
    response = api.client.post("/api/retrieval/explain",
                               json={"kb_id": kb_id, "query": "年假可以结转几天？"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"results", "faq", "trace"}
    assert body["results"][0]["document_id"] == ids["leave.md"]
    trace = body["trace"]
    assert trace["kb_id"] == kb_id and trace["mode"] == "hybrid"
    # two of the three documents are English: a Chinese query is cross-lingual here, so the
    # second dense channel (USE) is searched too
    assert {run["list_name"] for run in trace["channels"]} == {
        "dense:original", "sparse:original", "second_dense:original"}
    assert {"channels", "fusion", "ready_check", "total"} <= set(trace["timings_ms"])
    assert trace["returned_count"] == len(body["results"])


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"kb": "nope", "query": "hotel"}, 404, "not_found"),
    ({"kb_id": "nope", "query": "hotel"}, 404, "not_found"),
    ({"kb": "docs", "kb_id": "x", "query": "hotel"}, 422, "invalid_request"),
    ({"query": "hotel"}, 422, "invalid_request"),
    ({"kb": "docs"}, 422, "invalid_request"),
    ({"kb": "docs", "query": "hotel", "top_k": 0}, 422, "invalid_request"),
    ({"kb": "docs", "query": "hotel", "mode": "magic"}, 422, "invalid_request"),
    ({"kb": "docs", "query": "hotel", "unknown": 1}, 422, "invalid_request"),
    ({"kb": "docs", "query": "   "}, 400, "invalid_input"),
    ({"kb": "docs", "query": "？！"}, 400, "invalid_input"),
    ({"kb": "docs", "query": "x" * 1001}, 400, "invalid_input"),
    ({"kb": "docs", "query": "hotel", "document_ids": [f"d{i}" for i in range(51)]},
     400, "invalid_input"),
    ({"kb": "docs", "query": "hotel", "run_doc": False, "run_faq": False}, 400, "invalid_input"),
])
def test_bad_retrieval_requests_get_a_stable_error_code(
    ready: tuple[Api, str, dict[str, str]], body: dict[str, Any], status: int, code: str,
) -> None:
    api = ready[0]
    for route in ("/api/retrieval/search", "/api/retrieval/explain"):
        assert_error(api.client.post(route, json=body), status, code)


def test_every_channel_failing_is_503_and_one_failing_is_a_counted_degradation(
    ready: tuple[Api, str, dict[str, str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, kb_id, _ = ready

    def broken(*args: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(api.container.index, "search_dense", broken)
    explained = api.client.post("/api/retrieval/explain",
                                json={"kb_id": kb_id, "query": "hotel limit"}).json()
    assert [d["code"] for d in explained["trace"]["degradations"]] == ["dense_retrieval_failed"]
    assert explained["results"]

    monkeypatch.setattr(api.container.index, "search_sparse", broken)
    # the KB is mixed (Chinese leave rules beside English hotel rules): the second dense
    # channel searches its Chinese chunks for this English query, so it must fail too
    monkeypatch.setattr(api.container.index, "search_second_dense", broken)
    response = api.client.post("/api/retrieval/search",
                               json={"kb_id": kb_id, "query": "hotel limit"})
    assert_error(response, 503, "retrieval_unavailable")

    metrics = api.client.get("/metrics").text
    assert 'ragsift_retrieval_degradations_total{code="dense_retrieval_failed"} 1.0' in metrics


def test_a_kb_built_with_another_embedding_model_is_409_unless_searched_sparse(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with open_api(data) as api:  # the local e5
        kb_id = api.create_kb("docs")
        api.ingest(kb_id, {"hotels.md": HOTELS})
    other_model = {"embedder": "openai", "openai_embedding_dim": 384,
                   "openai_base_url": f"http://127.0.0.1:{free_port()}/v1"}  # never reached

    with open_api(data, **other_model) as api:
        for route in ("/api/retrieval/search", "/api/retrieval/explain"):
            for mode in ("hybrid", "dense"):
                response = api.client.post(route, json={"kb": "docs", "query": "hotel limit",
                                                        "mode": mode})
                body = assert_error(response, 409, "embedding_model_mismatch")
                assert "the configured embedder is openai:multilingual-e5-small" in body["message"]
        assert api.search(kb_id, "hotel limit", mode="sparse")
