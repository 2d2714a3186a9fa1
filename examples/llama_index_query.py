"""Query a running `ragsift serve` through a LlamaIndex RetrieverQueryEngine.

    pip install 'ragsift[llama-index]'
    ragsift keys create --name li-demo --role reader --kb demo    # prints the key once
    python examples/llama_index_query.py "年假可以结转几天？" --kb demo --key rs_... \
        --url http://127.0.0.1:8000 --top-k 4

The engine's model is llama-index-core's MockLLM, which answers with the prompt it was given:
the output shows what a real model would read. Pass any LlamaIndex LLM instead (e.g.
`OpenAI(model=...)` from llama-index-llms-openai) to get answers. The source nodes follow,
each with its score (rerank when it ran, else fused) and citation.
"""

from __future__ import annotations

import argparse
import os
import sys

from llama_index.core import get_response_synthesizer
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from ragsift.client import RagsiftApiError, RagsiftClientError
from ragsift.integrations.llama_index import RagsiftRetriever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the ragsift server")
    parser.add_argument("--key", default=os.environ.get("RAGSIFT_API_KEY"),
                        help="API key (default: $RAGSIFT_API_KEY)")
    parser.add_argument("--kb", required=True, help="knowledge base name")
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--chunks", action="store_true",
                        help="give the model the chunks, not their Small2Big windows")
    args = parser.parse_args(argv)

    retriever = RagsiftRetriever(args.url, api_key=args.key, kb=args.kb, top_k=args.top_k,
                                 content="chunk" if args.chunks else "context")
    engine = RetrieverQueryEngine(retriever=retriever,
                                  response_synthesizer=get_response_synthesizer(llm=MockLLM()))
    try:
        response = engine.query(args.question)
    except RagsiftApiError as exc:
        print(f"the server refused: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except RagsiftClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    print(f"--- answer (MockLLM echoes its prompt)\n{response}")
    print("\n--- source nodes")
    for scored in response.source_nodes:
        meta = scored.node.metadata
        print(f"{meta['rank']}. {meta['citation']}  score {scored.get_score():.3f} "
              f"(fused {meta['fusion_score']:.3f}, chunk {scored.node.node_id})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
