"""Build a LlamaIndex VectorStoreIndex over a ragsift knowledge base, insert documents, query
them through the framework's own query engine, and delete them again.

    pip install 'ragsift[llama-index]'
    ragsift keys create --name li-store --role editor --kb notes    # prints the key once
    python examples/llama_index_vectorstore.py --kb notes --key rs_... --url http://127.0.0.1:8000

The KB must exist. The server embeds the texts and the query; LlamaIndex's embed model (a
MockEmbedding here) is only run on insert and never used. The query engine's LLM is MockLLM
(it echoes the prompt): give `as_query_engine(llm=...)` a real one for answers.
"""

from __future__ import annotations

import argparse
import os
import sys

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from ragsift.client import RagsiftApiError, RagsiftClientError
from ragsift.integrations.llama_store import RagsiftVectorStore

DOCUMENTS = [
    Document(doc_id="li-leave", metadata={"dept": "hr"},
             text="Up to five unused leave days can be carried over to the next year."),
    Document(doc_id="li-hotel", metadata={"dept": "travel"},
             text="Hotels in London: at most 180 GBP a night."),
]


def run(store: RagsiftVectorStore) -> None:
    index = VectorStoreIndex.from_vector_store(store, embed_model=MockEmbedding(embed_dim=1))
    for document in DOCUMENTS:
        index.insert(document)
    try:
        print("--- retriever, top 2")
        for scored in index.as_retriever(similarity_top_k=2).retrieve("leave carry over"):
            print(f"{scored.score:.3f}  {scored.node.ref_doc_id}  {scored.node.get_content()}")
        print("--- query engine, dept = travel")
        travel = MetadataFilters(filters=[MetadataFilter(key="dept", value="travel")])
        engine = index.as_query_engine(llm=MockLLM(max_tokens=8), filters=travel)
        response = engine.query("hotel limit per night")
        for source in response.source_nodes:
            print(f"source {source.node.ref_doc_id}: {source.node.get_content()}")
    finally:
        for document in DOCUMENTS:
            index.delete_ref_doc(document.doc_id)
    print(f"--- deleted {len(DOCUMENTS)} documents")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the ragsift server")
    parser.add_argument("--key", default=os.environ.get("RAGSIFT_API_KEY"),
                        help="an editor API key (default: $RAGSIFT_API_KEY)")
    parser.add_argument("--kb", required=True, help="knowledge base name")
    args = parser.parse_args(argv)
    try:
        run(RagsiftVectorStore(args.url, api_key=args.key, kb=args.kb))
    except RagsiftApiError as exc:
        print(f"the server refused: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except RagsiftClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
