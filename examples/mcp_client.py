"""Ask ragsift a question through MCP, as any MCP client would (the official `mcp` SDK).

    pip install 'ragsift[mcp]'
    ragsift ingest samples --kb demo

    # stdio: this script starts `ragsift mcp` itself
    python examples/mcp_client.py "年假可以结转几天？" --kb demo

    # streamable HTTP: a running `ragsift mcp --transport streamable-http` and a key
    export RAGSIFT_API_KEY=rs_...        # ragsift keys create --name bot --role reader
    python examples/mcp_client.py "hotel limit per night" --url http://127.0.0.1:8000/mcp

It lists the tools, searches, prints each result with its citation, and fetches the best
result's context (its section and neighbouring passages) with get_chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connect(args: argparse.Namespace) -> AsyncIterator[ClientSession]:
    """A session over streamable HTTP (--url) or with a `ragsift mcp` child over stdio."""
    if args.url:
        key = os.environ.get("RAGSIFT_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
                streamable_http_client(args.url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session
        return
    command = [sys.executable, "-m", "ragsift.cli", "mcp"]
    if args.data_dir:
        command += ["--data-dir", args.data_dir]
    # the SDK gives the server a minimal environment: pass ragsift's settings, and PYTHONPATH
    # so the server imports the same ragsift as this client
    server = StdioServerParameters(command=command[0], args=command[1:],
                                   env={k: v for k, v in os.environ.items()
                                        if k.startswith("RAGSIFT_") or k == "PYTHONPATH"})
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(getattr(block, "text", "") for block in result.content)
        raise RuntimeError(f"{tool} failed: {text}")
    return dict(result.structured_content or {})


async def main(args: argparse.Namespace) -> None:
    async with connect(args) as session:
        tools = (await session.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in tools))
        kbs = await call(session, "list_knowledge_bases", {})
        print("knowledge bases:", ", ".join(
            f"{kb['name']} ({kb['ready']} documents)" for kb in kbs["knowledge_bases"]))

        arguments: dict[str, Any] = {"query": args.query, "top_k": args.top_k}
        if args.kb:
            arguments["kb"] = args.kb
        found = await call(session, "search", arguments)
        print(f"\n{len(found['results'])} results from {found['kb']!r}:")
        for hit in found["results"]:
            citation = hit["citation"]
            print(f"[{hit['rank']}] {citation['label']}  (chunk {citation['chunk_id']})")
            print(f"    {hit['text'][:200]}")
        for answer in found["faq"]:
            print(f"FAQ: {answer['question']} -> {answer['answer']}")
        if not found["results"]:
            return

        best = found["results"][0]["citation"]["chunk_id"]
        context = await call(session, "get_chunk", {"chunk_id": best, "window": 1})
        parent = context["parent"]
        print(f"\nthe best result's section ({len(context['previous'])} passage(s) before, "
              f"{len(context['next'])} after):")
        print(parent["text"] if parent else context["chunk"]["text"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query")
    parser.add_argument("--kb", help="knowledge base name (default: the only one)")
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--data-dir", help="stdio: the data directory [RAGSIFT_DATA_DIR]")
    parser.add_argument("--url", help="streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    parsed = parser.parse_args()
    try:
        asyncio.run(main(parsed))
    except Exception as exc:  # the SDK's task groups wrap errors in exception groups
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        hint = " (is RAGSIFT_API_KEY a valid key?)" if parsed.url else ""
        sys.exit(f"error: {exc}{hint}")
