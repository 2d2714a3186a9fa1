"""Write Documents into a ragsift knowledge base and retrieve them in a Haystack Pipeline, with
a Haystack filter, after a to_dict / from_dict round trip of the pipeline.

    pip install 'ragsift[haystack]'
    ragsift keys create --name hs-demo --role editor --kb notes    # prints the key once
    export RAGSIFT_API_KEY=rs_...
    python examples/haystack_pipeline.py --kb notes --url http://127.0.0.1:8000

The KB must exist. The key travels as a Secret from $RAGSIFT_API_KEY (never serialised).
The example deletes the documents it wrote before it exits.
"""

from __future__ import annotations

import argparse
import sys

from haystack import Document, Pipeline
from haystack.core.serialization import allow_deserialization_module

from ragsift.client import RagsiftApiError, RagsiftClientError
from ragsift.integrations.haystack import RagsiftDocumentWriter, RagsiftRetriever

DOCUMENTS = [
    Document(id="hs-example-leave", meta={"dept": "hr"},
             content="Unused leave: up to five days move to the next year."),
    Document(id="hs-example-hotel", meta={"dept": "travel"},
             content="A London hotel night may cost up to 180 GBP."),
]


def run(url: str, kb: str) -> None:
    writer = RagsiftDocumentWriter(base_url=url, kb=kb)
    print(f"--- written: {writer.run(documents=DOCUMENTS)['documents_written']}")
    try:
        pipeline = Pipeline()
        pipeline.add_component("retriever", RagsiftRetriever(base_url=url, kb=kb, top_k=3))
        allow_deserialization_module("ragsift.integrations.haystack")  # Haystack 3's allowlist
        restored = Pipeline.from_dict(pipeline.to_dict())
        travel = {"field": "meta.dept", "operator": "==", "value": "travel"}
        result = restored.run({"retriever": {"query": "hotel per night", "filters": travel}})
        for document in result["retriever"]["documents"]:
            print(f"{document.score:.3f}  {document.meta['citation']}  {document.content}")
    finally:
        writer.delete_documents([d.id for d in DOCUMENTS])
    print(f"--- deleted {len(DOCUMENTS)} documents")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the ragsift server")
    parser.add_argument("--kb", required=True, help="knowledge base name")
    args = parser.parse_args(argv)
    try:
        run(args.url, args.kb)
    except RagsiftApiError as exc:
        print(f"the server refused: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except RagsiftClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
