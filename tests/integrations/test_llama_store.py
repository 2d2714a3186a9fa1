"""RagsiftVectorStore for LlamaIndex inside the framework's own VectorStoreIndex, retriever and
query engine, against the session's live `ragsift serve` (one KB for the module)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from client.client_helpers import Served
from ragsift.client import KbOut, RagsiftClient
from ragsift.integrations.llama_store import RagsiftVectorStore

LEAVE = Document(text="Five unused annual leave days carry over to the next year.",
                 metadata={"dept": "hr"}, doc_id="handbook-leave")
HOTEL = Document(text="The hotel limit in London is 180 GBP per night.",
                 metadata={"dept": "travel"}, doc_id="policy-hotel")


@pytest.fixture(scope="module")
def kb(retrieval_server: Served) -> Iterator[KbOut]:
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.admin_key) as admin:
        made = admin.create_kb(f"llama-{uuid.uuid4().hex[:8]}")
        yield made
        admin.delete_kb(made.id)


@pytest.fixture(scope="module")
def index(retrieval_server: Served, kb: KbOut) -> VectorStoreIndex:
    store = RagsiftVectorStore(retrieval_server.url, api_key=retrieval_server.editor_key,
                               kb=kb.name)
    # the server embeds; LlamaIndex's embed model only fills node.embedding on insert
    index = VectorStoreIndex.from_vector_store(store, embed_model=MockEmbedding(embed_dim=4))
    index.insert(LEAVE)
    index.insert(HOTEL)
    return index


def test_the_index_retrieves_inserted_documents_scored_by_relevance(
    index: VectorStoreIndex,
) -> None:
    [found] = index.as_retriever(similarity_top_k=1).retrieve("How many leave days carry over?")

    assert found.node.get_content() == LEAVE.text
    assert found.node.metadata == {"dept": "hr"} and found.node.ref_doc_id == "handbook-leave"
    assert found.score is not None and 0.0 <= found.score <= 1.0


def test_the_query_engine_answers_from_the_stores_nodes_with_filters(
    index: VectorStoreIndex,
) -> None:
    travel_only = MetadataFilters(filters=[MetadataFilter(key="dept", value="travel")])
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=2, filters=travel_only)
    response = engine.query("leave days or hotels?")
    async_nodes = asyncio.run(index.as_retriever(similarity_top_k=2, doc_ids=["handbook-leave"])
                              .aretrieve("hotel limit"))

    assert [s.node.ref_doc_id for s in response.source_nodes] == ["policy-hotel"]
    assert [n.node.ref_doc_id for n in async_nodes] == ["handbook-leave"]


def test_delete_ref_doc_removes_the_documents_nodes(
    retrieval_server: Served, kb: KbOut, index: VectorStoreIndex,
) -> None:
    extra = Document(text="Laptops are replaced every three years.", doc_id="it-laptops")
    index.insert(extra)
    [node] = index.as_retriever(similarity_top_k=1).retrieve("laptop replacement")
    assert node.node.ref_doc_id == "it-laptops"

    index.delete_ref_doc("it-laptops")

    assert index.vector_store.get_nodes([node.node.node_id]) == []
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.reader_key) as reader:
        assert len(reader.list_documents(kb.id)) == 2


def test_the_example_builds_an_index_queries_and_deletes(
    retrieval_server: Served, kb: KbOut, index: VectorStoreIndex,
) -> None:
    example = Path(__file__).parents[2] / "examples" / "llama_index_vectorstore.py"
    done = subprocess.run(
        [sys.executable, str(example), "--url", retrieval_server.url,
         "--key", retrieval_server.editor_key, "--kb", kb.name],
        capture_output=True, text=True, timeout=120, check=False)

    assert done.returncode == 0, done.stderr
    assert "source li-hotel: Hotels in London" in done.stdout
    assert "deleted 2 documents" in done.stdout
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.reader_key) as reader:
        assert len(reader.list_documents(kb.id)) == 2  # the module's own two, not the example's
