"""Search (and optionally chat with) a knowledge base through a running `ragsift serve`.

    ragsift keys create --name demo --role admin        # prints the key once
    export RAGSIFT_API_KEY=rs_...
    ragsift serve --port 8000 &
    python examples/client_search.py "年假可以结转几天？" --kb demo \
        --upload samples/hr-handbook-zh.md samples/travel-policy-en.docx --chat

--upload creates the knowledge base if needed, uploads the files with a progress line and
waits until they are READY (or FAILED); --chat streams an answer with its citations.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ragsift.client import (
    CitationsEvent,
    DeltaEvent,
    ErrorBody,
    NotFoundError,
    RagsiftApiError,
    RagsiftClient,
    RagsiftClientError,
)


def _upload(client: RagsiftClient, kb_name: str, files: list[Path]) -> None:
    kb = next((kb for kb in client.list_kbs() if kb.name == kb_name), None)
    if kb is None:
        kb = client.create_kb(kb_name)

    def progress(sent: int, total: int) -> None:
        print(f"\ruploading {sent * 100 // max(total, 1):3d}%", end="", file=sys.stderr)

    uploaded = client.upload_documents(kb.id, files, progress=progress)
    print(file=sys.stderr)
    for document in client.wait_until_ready(uploaded, timeout=600):
        reason = f": {document.error}" if document.error else ""
        print(f"{document.status.value:<6} {document.filename}{reason}", file=sys.stderr)


def _chat(client: RagsiftClient, kb_name: str, query: str) -> None:
    print("\nanswer:")
    for event in client.chat_stream(query, kb=kb_name):
        if isinstance(event, DeltaEvent):
            print(event.text, end="", flush=True)
        elif isinstance(event, CitationsEvent):
            print()
            for citation in event.citations:
                print(f"  [{citation.n}] {citation.filename}")
        elif isinstance(event, ErrorBody):
            print(f"\nthe answer failed: {event.code}: {event.message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query")
    parser.add_argument("--kb", required=True, help="knowledge base name")
    parser.add_argument("--server", default="http://127.0.0.1:8000")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--upload", nargs="+", type=Path, default=[], metavar="FILE")
    parser.add_argument("--chat", action="store_true", help="also stream an answer")
    args = parser.parse_args(argv)

    try:
        with RagsiftClient(args.server, api_key=os.environ.get("RAGSIFT_API_KEY")) as client:
            if args.upload:
                _upload(client, args.kb, args.upload)
            for hit in client.search(args.query, kb=args.kb, top_k=args.top_k):
                where = " > ".join(hit.heading_path) or "-"
                print(f"{hit.rank}. {hit.filename} [{where}] fusion {hit.fusion_score:.3f}")
                print(f"   {' '.join(hit.text.split())[:160]}")
            if args.chat:
                _chat(client, args.kb, args.query)
    except NotFoundError as exc:
        print(f"not found: {exc.message}", file=sys.stderr)
        return 2
    except RagsiftApiError as exc:
        print(f"the server refused: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except RagsiftClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
