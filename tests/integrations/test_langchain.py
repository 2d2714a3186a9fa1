"""ragsift.integrations.langchain.RagsiftRetriever inside real LCEL chains (langchain-core),
against a live `ragsift serve` with auth on."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import SecretStr, ValidationError

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
from ragsift.integrations.langchain import RagsiftRetriever


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(doc.page_content for doc in docs)


def _retriever(served: Served, **options: object) -> RagsiftRetriever:
    return RagsiftRetriever.model_validate(
        {"base_url": served.url, "api_key": served.reader_key, "kb": "library", **options})


def _chain(retriever: RagsiftRetriever) -> Runnable[str, str]:
    return retriever | RunnableLambda(format_docs)


def test_an_lcel_chain_joins_the_page_contents_of_ragsifts_hits(
    retrieval_server: Served, library: Handbook, reader_client: RagsiftClient,
) -> None:
    retriever = _retriever(retrieval_server, top_k=3)

    answer = _chain(retriever).invoke(HOTEL_LIMIT)
    docs = retriever.invoke(HOTEL_LIMIT)
    hits = reader_client.search(HOTEL_LIMIT, kb="library", top_k=3)

    assert answer == "\n\n".join(hit.context_text or hit.text for hit in hits)
    assert "220 dollars" in answer
    assert [doc.id for doc in docs] == [hit.chunk_id for hit in hits]
    assert docs[0].metadata["filename"] == "hotels.md"


def test_documents_carry_ids_file_locator_headings_and_every_stages_scores(
    retrieval_server: Served, library: Handbook, reader_client: RagsiftClient,
) -> None:
    docs = _retriever(retrieval_server, top_k=4).invoke(CARRY_OVER)
    hits = reader_client.search(CARRY_OVER, kb="library", top_k=4)

    assert len(docs) == len(hits) > 0
    for doc, hit in zip(docs, hits, strict=True):
        assert set(doc.metadata) == METADATA_KEYS
        assert doc.metadata == expected_metadata(hit)
    top = docs[0].metadata
    assert (top["document_id"], top["filename"]) == (library.leave.id, "leave.md")
    assert top["heading_path"] == ["Employee handbook", "Annual leave"]
    assert top["citation"] == "leave.md › Employee handbook › Annual leave"
    # the server reranks by default here: the final score is the rerank score
    assert top["rerank_score"] is not None and top["final_score"] == top["rerank_score"]
    assert top["dense_rank"] is not None or top["sparse_rank"] is not None


def test_without_rerank_the_final_score_is_the_fused_score(
    retrieval_server: Served, library: Handbook,
) -> None:
    docs = _retriever(retrieval_server, rerank=False).invoke(CARRY_OVER)

    assert docs
    assert all(d.metadata["rerank_score"] is None for d in docs)
    assert all(d.metadata["final_score"] == d.metadata["fusion_score"] for d in docs)


def test_page_content_is_the_small2big_window_and_the_chunk_stays_in_metadata(
    retrieval_server: Served, library: Handbook,
) -> None:
    widened = _retriever(retrieval_server, small2big=True, top_k=1).invoke(CARRY_OVER)[0]
    plain = _retriever(retrieval_server, small2big=False, top_k=1).invoke(CARRY_OVER)[0]
    chunk_only = _retriever(retrieval_server, small2big=True, top_k=1,
                            content="chunk").invoke(CARRY_OVER)[0]

    chunk = widened.metadata["chunk_text"]
    assert "carried over" in chunk
    assert widened.page_content == widened.metadata["context_text"]
    assert chunk in widened.page_content and len(widened.page_content) > len(chunk)
    assert len(widened.metadata["context_chunk_ids"]) > 1
    assert plain.page_content == plain.metadata["chunk_text"] == chunk
    assert plain.metadata["context_text"] is None
    assert chunk_only.page_content == chunk
    assert chunk_only.metadata["context_text"] == widened.page_content


def test_the_document_whitelist_and_tenant_scope_reach_the_search(
    retrieval_server: Served, library: Handbook,
) -> None:
    only_hotels = _retriever(retrieval_server, document_ids=[library.hotels.id])
    only_globex = _retriever(retrieval_server, tenant_ids=["globex"])

    assert {d.metadata["filename"] for d in only_hotels.invoke(CARRY_OVER)} == {"hotels.md"}
    assert {d.metadata["filename"] for d in only_globex.invoke(HOTEL_LIMIT)} == {"leave.md"}


def test_a_metadata_filter_in_the_constructor_and_per_call_reaches_the_search(
    retrieval_server: Served, library: Handbook,
) -> None:
    hr_only = _retriever(retrieval_server, filter={"dept": "hr"})
    anything = _retriever(retrieval_server)

    found = hr_only.invoke(HOTEL_LIMIT)
    assert {d.metadata["filename"] for d in found} == {"leave.md"}
    assert found[0].metadata["document_metadata"] == {"dept": "hr", "year": 2023}
    assert {d.metadata["filename"] for d in anything.invoke(
        CARRY_OVER, filter={"year": {"$gte": 2024}})} == {"hotels.md"}
    # a per-call filter replaces the constructor's, for that call only
    assert {d.metadata["filename"] for d in hr_only.invoke(
        HOTEL_LIMIT, filter={"dept": {"$in": ["travel"]}})} == {"hotels.md"}
    with pytest.raises(ValueError, match=r"filter\.year\.\$gt"):
        _retriever(retrieval_server, filter={"year": {"$gt": True}})


def test_kbs_searches_several_knowledge_bases_with_one_ranking(
    retrieval_server: Served, library: Handbook, annex: KbOut,
) -> None:
    both = RagsiftRetriever.model_validate({
        "base_url": retrieval_server.url, "api_key": retrieval_server.reader_key,
        "kbs": ["library", annex.id]})

    found = both.invoke(PARKING_PERMIT)

    assert found[0].metadata["kb_id"] == annex.id
    assert {d.metadata["kb_id"] for d in found} == {library.kb.id, annex.id}
    # per call too, as any search option
    assert {d.metadata["kb_id"] for d in _retriever(retrieval_server).invoke(
        PARKING_PERMIT, kbs=["annex"])} == {annex.id}


def test_k_is_top_k_and_invoke_keywords_are_search_options_for_that_call_only(
    retrieval_server: Served, library: Handbook,
) -> None:
    retriever = _retriever(retrieval_server, k=2)

    narrowed = retriever.invoke(CARRY_OVER, k=1, document_ids=[library.hotels.id])
    default = retriever.invoke(CARRY_OVER)

    assert (retriever.k, retriever.top_k) == (2, 2)
    assert [d.metadata["filename"] for d in narrowed] == ["hotels.md"]
    assert len(default) == 2 and default[0].metadata["filename"] == "leave.md"
    with pytest.raises(ValueError, match="unknown ragsift search options: topk"):
        retriever.invoke(CARRY_OVER, topk=1)


def test_ainvoke_runs_the_chain_with_the_async_client(
    retrieval_server: Served, library: Handbook,
) -> None:
    retriever = _retriever(retrieval_server, top_k=3)

    async def both() -> tuple[str, list[Document]]:
        return await _chain(retriever).ainvoke(HOTEL_LIMIT), await retriever.ainvoke(HOTEL_LIMIT)

    answer, docs = asyncio.run(both())

    assert answer == _chain(retriever).invoke(HOTEL_LIMIT)
    assert [d.id for d in docs] == [d.id for d in retriever.invoke(HOTEL_LIMIT)]
    assert docs[0].metadata == retriever.invoke(HOTEL_LIMIT)[0].metadata


def test_a_bad_key_raises_unauthorized_from_invoke_and_ainvoke(
    retrieval_server: Served, library: Handbook,
) -> None:
    chain = _chain(_retriever(retrieval_server, api_key="rs_" + "x" * 43))

    with pytest.raises(UnauthorizedError) as refused:
        chain.invoke(HOTEL_LIMIT)
    with pytest.raises(UnauthorizedError) as refused_async:
        asyncio.run(chain.ainvoke(HOTEL_LIMIT))

    for error in (refused.value, refused_async.value):
        assert (error.status, error.code) == (401, "unauthorized")
        assert str(error).startswith("HTTP 401 unauthorized: ")


def test_the_key_is_a_secret_and_defaults_to_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGSIFT_API_KEY", "rs_from_env")
    retriever = RagsiftRetriever(base_url="http://127.0.0.1:1", kb="library")

    assert isinstance(retriever.api_key, SecretStr)
    assert retriever.api_key.get_secret_value() == "rs_from_env"
    assert "rs_from_env" not in repr(retriever)


@pytest.mark.parametrize("options", [
    {"top_k": 0}, {"k": 0}, {"k": 3, "top_k": 4}, {"mode": "fuzzy"}, {"kb_id": "kb-1"},
    {"topk": 3},
], ids=["top_k-out-of-range", "k-out-of-range", "k-and-top_k-disagree", "unknown-mode",
        "kb-and-kb_id", "unknown-field"])
def test_invalid_options_are_refused_when_the_retriever_is_made(options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RagsiftRetriever.model_validate({"base_url": "http://127.0.0.1:1", "kb": "library",
                                         **options})


def test_importing_ragsift_and_its_client_does_not_import_langchain() -> None:
    loaded = modules_loaded_by("import ragsift, ragsift.client, ragsift.integrations.search")

    assert "ragsift" in loaded
    assert "langchain_core" not in loaded
    assert "llama_index" not in loaded
