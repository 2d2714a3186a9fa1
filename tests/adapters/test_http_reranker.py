"""HttpReranker (cohere, tei, dashscope shapes) against a real fake-model server process."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ragsift.adapters.http_reranker import HttpReranker, RerankStyle
from ragsift.domain.errors import UpstreamError
from ragsift.domain.stages import RerankScore
from support.fixtures import LLMServer

STYLES: list[RerankStyle] = ["cohere", "tei", "dashscope"]
QUERY = "milvus hybrid search"
PASSAGES = [
    "Tantivy is a full-text search library.",
    "Milvus supports hybrid search with BM25 and dense vectors.",
    "A recipe for dumplings.",
]
# Word overlap with QUERY: passage 1 has all three words, passage 0 one, passage 2 none.
EXPECTED = [
    RerankScore(index=1, score=1.0),
    RerankScore(index=0, score=0.333333),
    RerankScore(index=2, score=0.0),
]
PATHS = {"cohere": "/v1/rerank", "tei": "/tei/rerank", "dashscope": "/dashscope/text-rerank"}


def _reranker(
    server: LLMServer, style: RerankStyle, timeout_s: float = 5.0, api_key: str | None = "sk-r"
) -> HttpReranker:
    base = {
        "cohere": f"{server.url}/v1",
        "tei": f"{server.url}/tei",
        "dashscope": f"{server.url}/dashscope/text-rerank",
    }[style]
    return HttpReranker(base, "gte-rerank-v2", api_key=api_key, style=style, timeout_s=timeout_s)


def _expected_body(style: RerankStyle, query: str, passages: list[str]) -> dict[str, Any]:
    if style == "tei":
        return {"query": query, "texts": passages, "raw_scores": False}
    if style == "dashscope":
        return {
            "model": "gte-rerank-v2",
            "input": {"query": query, "documents": passages},
            "parameters": {"top_n": len(passages), "return_documents": False},
        }
    return {"model": "gte-rerank-v2", "query": query, "documents": passages, "top_n": 3}


@pytest.mark.parametrize("style", STYLES)
def test_rerank_sends_the_published_body_and_returns_server_scores(
    llm_server: LLMServer, style: RerankStyle
) -> None:
    scores = _reranker(llm_server, style).rerank(QUERY, PASSAGES)

    assert scores == EXPECTED
    request = llm_server.last(style)
    assert request["path"] == PATHS[style]
    assert request["authorization"] == "Bearer sk-r"
    assert request["body"] == _expected_body(style, QUERY, PASSAGES)


@pytest.mark.parametrize("style", STYLES)
def test_chinese_passages_are_scored_and_sent_intact(
    llm_server: LLMServer, style: RerankStyle
) -> None:
    passages = ["今天天气很好", "混合检索结合稠密向量和 BM25", "检索"]
    scores = _reranker(llm_server, style).rerank("混合检索", passages)
    assert [score.index for score in scores] == [1, 2, 0]
    assert llm_server.last(style)["body"] == _expected_body(style, "混合检索", passages)


def test_model_id_names_the_style_and_the_model(llm_server: LLMServer) -> None:
    assert _reranker(llm_server, "tei").model_id == "tei:gte-rerank-v2"


def test_no_api_key_sends_no_authorization_header(llm_server: LLMServer) -> None:
    _reranker(llm_server, "cohere", api_key=None).rerank(QUERY, PASSAGES)
    assert llm_server.last("cohere")["authorization"] is None


def test_empty_batch_returns_no_scores_without_calling_the_server(llm_server: LLMServer) -> None:
    assert _reranker(llm_server, "cohere").rerank(QUERY, []) == []
    assert llm_server.last_kinds() == []


@pytest.mark.parametrize("style", STYLES)
def test_http_500_raises_upstream_error_with_the_status(
    llm_server: LLMServer, style: RerankStyle
) -> None:
    llm_server.control(rerank={"mode": "error500"})
    with pytest.raises(UpstreamError, match="HTTP 500"):
        _reranker(llm_server, style).rerank(QUERY, PASSAGES)


@pytest.mark.parametrize("style", ["cohere", "dashscope"])
def test_stall_past_the_timeout_raises_upstream_error_promptly(
    llm_server: LLMServer, style: RerankStyle
) -> None:
    llm_server.control(rerank={"mode": "stall", "stall_s": 3})
    started = time.monotonic()
    with pytest.raises(UpstreamError, match="timed out"):
        _reranker(llm_server, style, timeout_s=1.0).rerank(QUERY, PASSAGES)
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("style", STYLES)
def test_non_json_body_raises_upstream_error(llm_server: LLMServer, style: RerankStyle) -> None:
    llm_server.control(rerank={"mode": "garbage"})
    with pytest.raises(UpstreamError, match="unexpected shape"):
        _reranker(llm_server, style).rerank(QUERY, PASSAGES)


@pytest.mark.parametrize("style", STYLES)
def test_results_missing_the_score_field_raise_upstream_error(
    llm_server: LLMServer, style: RerankStyle
) -> None:
    llm_server.control(rerank={"mode": "missing_fields"})
    with pytest.raises(UpstreamError, match="score"):
        _reranker(llm_server, style).rerank(QUERY, PASSAGES)


@pytest.mark.parametrize(
    ("style", "wrong_shape"),
    [
        ("cohere", [{"index": 0, "relevance_score": 0.5}]),  # TEI's bare list
        ("tei", {"results": [{"index": 0, "score": 0.5}]}),
        ("dashscope", {"results": [{"index": 0, "relevance_score": 0.5}]}),  # no "output"
        ("cohere", {"results": [{"index": "0", "relevance_score": 0.5}]}),
        ("cohere", {"results": [{"index": 0, "relevance_score": "high"}]}),
    ],
)
def test_answers_of_another_shape_raise_upstream_error(
    llm_server: LLMServer, style: RerankStyle, wrong_shape: Any
) -> None:
    llm_server.control(rerank={"mode": "ok", "raw": wrong_shape})
    with pytest.raises(UpstreamError, match="unexpected shape"):
        _reranker(llm_server, style).rerank(QUERY, PASSAGES)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(
    ("mode", "expected_indices"),
    [
        ("out_of_range", [1, 0, 2, 3]),
        ("duplicates", [1, 1, 0, 2]),
        ("empty", []),
        ("short", [1]),
    ],
)
def test_well_shaped_but_invalid_answers_are_returned_unchanged_for_the_validator(
    llm_server: LLMServer, style: RerankStyle, mode: str, expected_indices: list[int]
) -> None:
    llm_server.control(rerank={"mode": mode})
    scores = _reranker(llm_server, style).rerank(QUERY, PASSAGES)
    assert [score.index for score in scores] == expected_indices


def test_integer_scores_are_accepted_as_floats(llm_server: LLMServer) -> None:
    llm_server.control(rerank={"raw": {"results": [{"index": 0, "relevance_score": 1}]}})
    assert _reranker(llm_server, "cohere").rerank(QUERY, PASSAGES) == [
        RerankScore(index=0, score=1.0)
    ]


@pytest.mark.parametrize(
    ("base_url", "model", "style"),
    [("localhost/v1", "m", "cohere"), ("http://h/v1", "", "tei"), ("http://h", "m", "jina")],
)
def test_bad_configuration_is_refused_at_construction(
    base_url: str, model: str, style: Any
) -> None:
    with pytest.raises(ValueError):
        HttpReranker(base_url, model, style=style)


@pytest.mark.parametrize("style", STYLES)
def test_a_rate_limited_rerank_is_retried_and_then_scored(
    llm_server: LLMServer, style: RerankStyle
) -> None:
    llm_server.control(faults={"rerank": {"status": 429, "retry_after": "0", "times": 2}})
    assert _reranker(llm_server, style).rerank(QUERY, PASSAGES) == EXPECTED
    assert [a["answer"] for a in llm_server.attempts("rerank")] == [429, 429, 200]


def test_rerank_retries_stop_at_the_timeout_budget(llm_server: LLMServer) -> None:
    # Retry-After 1 s with a 1.5 s budget: attempts at 0 and 1 s, a third would end past it
    llm_server.control(faults={"rerank": {"status": 503, "retry_after": "1"}})
    with pytest.raises(UpstreamError, match=r"HTTP 503.*gave up after 2 attempts"):
        _reranker(llm_server, "cohere", timeout_s=1.5).rerank(QUERY, PASSAGES)
    assert len(llm_server.attempts("rerank")) == 2


def test_scores_the_server_sends_as_json_infinity_or_nan_are_returned_for_the_caller_to_judge(
    llm_server: LLMServer,
) -> None:
    # Python's JSON reads these literals as floats; validate_scores rejects them, not the parser
    llm_server.control(rerank={"raw_body": '{"results": [{"index": 0, "relevance_score": '
                                           'Infinity}, {"index": 1, "relevance_score": NaN}]}'})
    scores = _reranker(llm_server, "cohere").rerank(QUERY, PASSAGES)
    assert [s.index for s in scores] == [0, 1]
    assert scores[0].score == float("inf") and scores[1].score != scores[1].score
