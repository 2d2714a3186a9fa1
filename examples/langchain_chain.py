"""Retrieve from a running `ragsift serve` inside a LangChain (LCEL) chain.

    pip install 'ragsift[langchain]'
    ragsift keys create --name lc-demo --role reader --kb demo    # prints the key once
    python examples/langchain_chain.py "年假可以结转几天？" --kb demo --key rs_... \
        --url http://127.0.0.1:8000 --top-k 4

The chain is `{"context": retriever | format_docs, "question": passthrough} | prompt`: it
prints the prompt a chat model would get (append `| llm | StrOutputParser()` for an answer,
with any LangChain chat model), then each source with its citation and scores.
"""

from __future__ import annotations

import argparse
import os
import sys

from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from ragsift.client import RagsiftApiError, RagsiftClientError
from ragsift.integrations.langchain import RagsiftRetriever

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer from the numbered sources only and cite them as [n]."),
    ("human", "Sources:\n\n{context}\n\nQuestion: {question}"),
])


def format_docs(docs: list[Document]) -> str:
    """The sources as numbered blocks, each headed by its citation."""
    return "\n\n".join(f"[{n}] {doc.metadata['citation']}\n{doc.page_content}"
                       for n, doc in enumerate(docs, start=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the ragsift server")
    parser.add_argument("--key", default=os.environ.get("RAGSIFT_API_KEY"),
                        help="API key (default: $RAGSIFT_API_KEY)")
    parser.add_argument("--kb", required=True, help="knowledge base name")
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--no-rerank", action="store_true", help="skip the rerank stage")
    args = parser.parse_args(argv)

    retriever = RagsiftRetriever(base_url=args.url, api_key=args.key, kb=args.kb,
                                 top_k=args.top_k, rerank=False if args.no_rerank else None)
    chain = {"context": retriever | RunnableLambda(format_docs),
             "question": RunnablePassthrough()} | PROMPT
    try:
        prompt = chain.invoke(args.question)
        docs = retriever.invoke(args.question)
    except RagsiftApiError as exc:
        print(f"the server refused: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except RagsiftClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    for message in prompt.to_messages():
        print(f"--- {message.type}\n{message.content}")
    print("\n--- sources")
    for doc in docs:
        meta = doc.metadata
        rerank = "-" if meta["rerank_score"] is None else f"{meta['rerank_score']:.3f}"
        print(f"{meta['rank']}. {meta['citation']}  final {meta['final_score']:.3f} "
              f"(dense #{meta['dense_rank']}, bm25 #{meta['sparse_rank']}, "
              f"fused {meta['fusion_score']:.3f}, rerank {rerank})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
