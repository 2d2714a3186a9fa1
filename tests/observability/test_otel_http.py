"""Trace context through the API: the caller's `traceparent` -> ragsift's server span -> the
search and its stage spans -> client spans to the model servers, whose requests carry it on
(in-memory exporter; the fake model server records the headers it receives)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from api.api_helpers import SMALL_CHUNKS, Api
from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.observability.otel import RetrievalSpans
from support.fixtures import LLMServer

TEXT = b"# Travel\n\nThe hotel limit per night is 150 dollars; in Tokyo 220 dollars.\n"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"
CALLER = {"traceparent": TRACEPARENT, "tracestate": "vendor=abc", "baggage": "tenant=acme"}


@pytest.fixture
def traced(tmp_path: Path, llm_server: LLMServer) -> Iterator[tuple[Api, InMemorySpanExporter]]:
    """An app with tracing on, an in-memory exporter, the fake server as reranker and LLM."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    container = build(Settings(
        data_dir=tmp_path / "data", auth=False, reranker="http",
        rerank_base_url=f"{llm_server.url}/v1", llm_base_url=f"{llm_server.url}/v1",
        **SMALL_CHUNKS))
    spans = RetrievalSpans(provider)  # what RAGSIFT_OTEL_EXPORTER builds, on our exporter
    object.__setattr__(container, "spans", spans)
    object.__setattr__(container.retrieval, "_observer", spans)
    try:
        with TestClient(create_app(container)) as client:
            yield Api(client, container), exporter
    finally:
        container.close()


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    [span] = [s for s in spans if s.name == name]
    return span


def test_a_search_joins_the_callers_trace_down_to_the_model_server_call(
    traced: tuple[Api, InMemorySpanExporter], llm_server: LLMServer
) -> None:
    api, exporter = traced
    kb_id = api.create_kb()
    api.ingest(kb_id, {"travel.md": TEXT})
    exporter.clear()
    response = api.client.post("/api/retrieval/search", headers=CALLER, json={
        "kb_id": kb_id, "query": "hotel limit per night", "rewrite": False})
    assert response.status_code == 200, response.text

    spans = list(exporter.get_finished_spans())
    assert {format(s.context.trace_id, "032x") for s in spans} == {TRACE_ID}
    server = _one(spans, "POST /api/retrieval/search")
    assert server.kind == SpanKind.SERVER
    assert server.parent is not None and format(server.parent.span_id, "016x") == CALLER_SPAN
    assert server.parent.is_remote and server.context.trace_state.get("vendor") == "abc"
    assert dict(server.attributes or {}) | {"client.address": "-"} == {
        "http.request.method": "POST", "url.path": "/api/retrieval/search", "url.scheme": "http",
        "http.route": "/api/retrieval/search", "http.response.status_code": 200,
        "server.address": "testserver", "server.port": 80, "network.protocol.version": "1.1",
        "user_agent.original": "testclient", "client.address": "-"}
    search = _one(spans, "ragsift.search")
    assert search.parent is not None and search.parent.span_id == server.context.span_id
    stages = [s for s in spans if s.name.startswith("ragsift.stage.")]
    assert stages and all(s.parent is not None and s.parent.span_id == search.context.span_id
                          for s in stages)
    [rerank] = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert rerank.parent is not None and rerank.parent.span_id == search.context.span_id
    attributes = dict(rerank.attributes or {})
    assert attributes["ragsift.upstream"] == "reranker"
    assert attributes["url.full"] == f"{llm_server.url}/v1/rerank"
    assert attributes["http.response.status_code"] == 200
    # the model server got the same trace, as a child of the client span, and the baggage
    received = llm_server.last("cohere")
    assert received["traceparent"] == (
        f"00-{TRACE_ID}-{format(rerank.context.span_id, '016x')}-01")
    assert received["baggage"] == "tenant=acme"


def test_openai_dify_and_mcp_requests_join_the_callers_trace_too(
    traced: tuple[Api, InMemorySpanExporter], llm_server: LLMServer
) -> None:
    api, exporter = traced
    kb_id = api.create_kb("docs")
    api.ingest(kb_id, {"travel.md": TEXT})
    exporter.clear()
    chat = api.client.post("/v1/chat/completions", headers=CALLER, json={
        "model": "kb:docs", "messages": [{"role": "user", "content": "hotel limit in Tokyo?"}]})
    assert chat.status_code == 200, chat.text
    dify = api.client.post("/dify/retrieval", headers=CALLER, json={
        "knowledge_id": "docs", "query": "hotel limit",
        "retrieval_setting": {"top_k": 2, "score_threshold": 0.0}})
    assert dify.status_code == 200, dify.text
    mcp = api.client.post("/mcp", headers={**CALLER, "Accept": "application/json, "
                                           "text/event-stream"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
    assert mcp.status_code == 200, mcp.text

    spans = list(exporter.get_finished_spans())
    servers = {s.name: s for s in spans if s.kind == SpanKind.SERVER}
    assert set(servers) == {"POST /v1/chat/completions", "POST /dify/retrieval", "POST /mcp"}
    assert {format(s.context.trace_id, "032x") for s in spans} == {TRACE_ID}
    clients = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert "chat model" in {(s.attributes or {}).get("ragsift.upstream") for s in clients}
    # the last call to /v1/chat/completions (the chat model's or the rewriter's) carried its
    # own client span as the parent
    assert llm_server.last("chat")["traceparent"] in {
        f"00-{TRACE_ID}-{format(s.context.span_id, '016x')}-01" for s in clients}


def test_without_a_traceparent_each_request_starts_its_own_trace(
    traced: tuple[Api, InMemorySpanExporter],
) -> None:
    api, exporter = traced
    for _ in range(2):
        assert api.client.get("/healthz").status_code == 200
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["GET /healthz", "GET /healthz"]
    assert spans[0].context.trace_id != spans[1].context.trace_id
    assert all(s.parent is None for s in spans)
