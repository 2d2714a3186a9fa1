"""Write notes into a ragsift knowledge base as a LangChain vector store, search them with a
filter and a relevance threshold, read them back by id and delete them.

    pip install 'ragsift[langchain]'
    ragsift keys create --name lc-store --role editor --kb notes    # prints the key once
    python examples/langchain_vectorstore.py --kb notes --key rs_... --url http://127.0.0.1:8000

The KB must exist (`ragsift kb create notes` or POST /api/kbs). The server embeds the texts
with its own embedder; the example removes the notes it wrote before it exits.
"""

from __future__ import annotations

import argparse
import os
import sys

from langchain_core.documents import Document

from ragsift.client import RagsiftApiError, RagsiftClientError
from ragsift.integrations.langchain_store import RagsiftVectorStore

NOTES = [
    Document(id="note-leave", page_content="Up to five unused leave days can be carried over "
             "to the next year; they expire at the end of March.",
             metadata={"dept": "hr", "year": 2024}),
    Document(id="note-hotel", page_content="The hotel limit in London is 180 GBP per night.",
             metadata={"dept": "travel", "year": 2024}),
    Document(id="note-laptop", page_content="Laptops are replaced every three years.",
             metadata={"dept": "it", "year": 2023}),
]


def run(store: RagsiftVectorStore) -> None:
    ids = store.add_documents(NOTES)
    try:
        print("--- similarity_search_with_score, all notes")
        for doc, relevance in store.similarity_search_with_score(
                "How many leave days carry over?", k=3):
            print(f"{relevance:.3f}  {doc.id}  {doc.metadata}  {doc.page_content[:50]}")
        print("--- as_retriever, filter year >= 2024, k=1")
        retriever = store.as_retriever(search_kwargs={"k": 1,
                                                      "filter": {"year": {"$gte": 2024}}})
        for doc in retriever.invoke("hotel per night"):
            print(f"{doc.id}  {doc.page_content}")
        print("--- get_by_ids")
        for doc in store.get_by_ids(["note-laptop"]):
            print(f"{doc.id}  {doc.metadata}  {doc.page_content}")
    finally:
        store.delete(ids)
    print(f"--- deleted {len(ids)} notes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the ragsift server")
    parser.add_argument("--key", default=os.environ.get("RAGSIFT_API_KEY"),
                        help="an editor API key (default: $RAGSIFT_API_KEY)")
    parser.add_argument("--kb", required=True, help="knowledge base name")
    args = parser.parse_args(argv)
    try:
        run(RagsiftVectorStore(base_url=args.url, api_key=args.key, kb=args.kb))
    except RagsiftApiError as exc:
        print(f"the server refused: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except RagsiftClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
