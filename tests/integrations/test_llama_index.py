"""ragsift.integrations.llama_index.RagsiftRetriever in a real RetrieverQueryEngine
(llama-index-core, its own MockLLM), against a live `ragsift serve` with auth on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import get_response_synthesizer
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from pydantic import ValidationError

from client.client_helpers import Handbook, Served
from integrations.retriever_helpers import (
    CARRY_OVER,
    HOTEL_LIMIT,
    METADATA_KEYS,
    PARKING_PERMIT,
    expected_metadata,
    modules_loaded_by,
)
from ragsift.client import KbOut, RagsiftClient, UnauthorizedError
from ragsift.integrations.llama_filters import UnsupportedFilterError
from ragsift.integrations.llama_index import RagsiftRetriever


def _retriever(served: Served, **options: Any) -> RagsiftRetriever:
    return RagsiftRetriever(served.url, api_key=served.reader_key, kb="library", **options)


def _engine(retriever: RagsiftRetriever) -> RetrieverQueryEngine:
    # MockLLM answers with the prompt it was given: the answer shows what the model saw
    synthesizer = get_response_synthesizer(llm=MockLLM())
    return RetrieverQueryEngine(retriever=retriever, response_synthesizer=synthesizer)


def _text_node(scored: NodeWithScore) -> TextNode:
    assert isinstance(scored.node, TextNode)
    return scored.node


def test_a_query_engine_answers_from_ragsifts_hits_with_their_metadata(
    retrieval_server: Served, library: Handbook, reader_client: RagsiftClient,
) -> None:
    response = _engine(_retriever(retrieval_server, top_k=3)).query(CARRY_OVER)
    hits = reader_client.search(CARRY_OVER, kb="library", top_k=3)

    assert isinstance(response, Response)
    assert [s.node.node_id for s in response.source_nodes] == [hit.chunk_id for hit in hits]
    for scored, hit in zip(response.source_nodes, hits, strict=True):
        node = _text_node(scored)
        assert set(node.metadata) == METADATA_KEYS
        assert node.metadata == expected_metadata(hit)
        assert node.text == (hit.context_text or hit.text)
        assert node.ref_doc_id == hit.document_id
        assert scored.score == node.metadata["relevance"] == hit.relevance
    top = _text_node(response.source_nodes[0])
    assert (top.metadata["filename"], top.ref_doc_id) == ("leave.md", library.leave.id)
    # the model saw the evidence and its citation, not the scores
    answer = str(response)
    assert "carried over" in answer
    assert "citation: leave.md › Employee handbook › Annual leave" in answer
    assert "fusion_score" not in answer and "chunk_id" not in answer


def test_the_score_is_the_calibrated_relevance_whether_reranked_or_not(
    retrieval_server: Served, library: Handbook,
) -> None:
    reranked = _retriever(retrieval_server).retrieve(HOTEL_LIMIT)
    fused = _retriever(retrieval_server, rerank=False).retrieve(HOTEL_LIMIT)

    assert reranked and fused
    for scored in reranked:
        metadata = _text_node(scored).metadata
        assert metadata["rerank_score"] is not None
        assert scored.score == metadata["relevance"] and 0.0 <= metadata["relevance"] <= 1.0
    for scored in fused:
        metadata = _text_node(scored).metadata
        assert metadata["rerank_score"] is None and metadata["final_score"] == metadata[
            "fusion_score"]
        assert scored.score == metadata["relevance"] and 0.0 <= metadata["relevance"] <= 1.0
    # monotone in the fused score within the request
    ordered = sorted(fused, key=lambda s: _text_node(s).metadata["fusion_score"])
    assert [s.score for s in ordered] == sorted(s.score or 0.0 for s in fused)


def test_node_text_is_the_small2big_window_unless_chunks_are_asked_for(
    retrieval_server: Served, library: Handbook,
) -> None:
    widened = _text_node(_retriever(retrieval_server, top_k=1, small2big=True)
                         .retrieve(CARRY_OVER)[0])
    chunk = _text_node(_retriever(retrieval_server, top_k=1, small2big=True, content="chunk")
                       .retrieve(CARRY_OVER)[0])

    assert widened.text == widened.metadata["context_text"] != widened.metadata["chunk_text"]
    assert chunk.text == chunk.metadata["chunk_text"] == widened.metadata["chunk_text"]
    assert widened.metadata["chunk_text"] in widened.text
    assert widened.get_content(MetadataMode.EMBED) == widened.text  # no metadata embedded


def test_similarity_top_k_and_metadata_filters_shape_a_query_engines_sources(
    retrieval_server: Served, library: Handbook,
) -> None:
    only_acme = MetadataFilters(filters=[
        MetadataFilter(key="tenant_id", value="acme", operator=FilterOperator.EQ)])
    two_docs = MetadataFilters(filters=[MetadataFilter(
        key="document_id", value=[library.hotels.id, library.leave.id],
        operator=FilterOperator.IN)])

    acme = _engine(_retriever(retrieval_server, similarity_top_k=2, filters=only_acme)
                   ).query(CARRY_OVER)
    top_one = _retriever(retrieval_server, similarity_top_k=1, filters=two_docs)

    assert len(acme.source_nodes) == 2
    assert {_text_node(s).metadata["filename"] for s in acme.source_nodes} == {"hotels.md"}
    assert top_one.similarity_top_k == 1
    assert [_text_node(s).metadata["filename"] for s in top_one.retrieve(CARRY_OVER)] == [
        "leave.md"]
    with pytest.raises(UnsupportedFilterError, match="case-insensitive"):
        _retriever(retrieval_server, filters=MetadataFilters(filters=[MetadataFilter(
            key="author", value="x", operator=FilterOperator.TEXT_MATCH_INSENSITIVE)]))


def test_metadata_filters_on_metadata_keys_become_a_metadata_filter(
    retrieval_server: Served, library: Handbook,
) -> None:
    recent_or_hr = MetadataFilters(filters=[
        MetadataFilter(key="year", value=2024, operator=FilterOperator.GTE),
        MetadataFilters(filters=[MetadataFilter(key="dept", value="hr")]),
    ], condition=FilterCondition.OR)
    not_travel = MetadataFilters(filters=[MetadataFilter(key="dept", value="travel")],
                                 condition=FilterCondition.NOT)

    both = _retriever(retrieval_server, filters=recent_or_hr).retrieve(HOTEL_LIMIT)
    hr = _retriever(retrieval_server, filters=not_travel).retrieve(HOTEL_LIMIT)

    assert {_text_node(s).metadata["filename"] for s in both} == {"hotels.md", "leave.md"}
    assert {_text_node(s).metadata["filename"] for s in hr} == {"leave.md"}


def test_kbs_searches_several_knowledge_bases_and_each_node_names_its_kb(
    retrieval_server: Served, library: Handbook, annex: KbOut, reader_client: RagsiftClient,
) -> None:
    retriever = RagsiftRetriever(retrieval_server.url, api_key=retrieval_server.reader_key,
                                 kbs=["library", "annex"])

    nodes = retriever.retrieve(PARKING_PERMIT)
    hits = reader_client.search(PARKING_PERMIT, kbs=["library", "annex"])  # the SDK

    assert nodes[0].node.metadata["kb_id"] == annex.id == hits[0].kb_id
    assert {n.node.metadata["kb_id"] for n in nodes} == {library.kb.id, annex.id}


def test_aquery_and_aretrieve_use_the_async_client(
    retrieval_server: Served, library: Handbook,
) -> None:
    retriever = _retriever(retrieval_server, top_k=2, tenant_ids=["acme"])

    async def both() -> tuple[list[NodeWithScore], list[NodeWithScore]]:
        response = await _engine(retriever).aquery(HOTEL_LIMIT)
        return response.source_nodes, await retriever.aretrieve(HOTEL_LIMIT)

    sources, retrieved = asyncio.run(both())
    synced = retriever.retrieve(HOTEL_LIMIT)

    assert [s.node.node_id for s in sources] == [s.node.node_id for s in synced]
    assert [s.node.node_id for s in retrieved] == [s.node.node_id for s in synced]
    assert {_text_node(s).metadata["filename"] for s in retrieved} == {"hotels.md"}


def test_a_bad_key_raises_unauthorized_from_query_and_aquery(
    retrieval_server: Served, library: Handbook,
) -> None:
    engine = _engine(RagsiftRetriever(retrieval_server.url, api_key="rs_" + "x" * 43,
                                      kb="library"))

    with pytest.raises(UnauthorizedError) as refused:
        engine.query(HOTEL_LIMIT)
    with pytest.raises(UnauthorizedError) as refused_async:
        asyncio.run(engine.aquery(HOTEL_LIMIT))

    for error in (refused.value, refused_async.value):
        assert (error.status, error.code) == (401, "unauthorized")


@pytest.mark.parametrize("options", [
    {"top_k": 0}, {"similarity_top_k": 0}, {"rerank": "maybe"}, {"kb_id": "kb-1"}, {"topk": 3},
], ids=["top_k-out-of-range", "similarity_top_k-out-of-range", "not-a-bool", "kb-and-kb_id",
        "unknown-keyword"])
def test_invalid_options_are_refused_when_the_retriever_is_made(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        RagsiftRetriever("http://127.0.0.1:1", kb="library", **options)


def test_importing_ragsift_and_its_client_does_not_import_llama_index() -> None:
    loaded = modules_loaded_by("import ragsift, ragsift.client, ragsift.integrations")

    assert "ragsift" in loaded
    assert "llama_index" not in loaded
    assert "langchain_core" not in loaded
