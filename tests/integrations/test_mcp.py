"""`ragsift mcp` driven by the official MCP SDK's own clients, over stdio and streamable HTTP,
against a real data directory made with `ragsift ingest`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, TextResourceContents

from ragsift.auth.keys import ApiKey, KeyScope, Role
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, Locator
from ragsift.integrations.mcp_results import citation_label
from ragsift.integrations.mcp_server import document_visible
from support.live_server import LiveServer, serving
from support.otlp_receiver import OtlpReceiver, otlp_receiver
from support.serve import free_port, ragsift_command, running

T = TypeVar("T")

TRAVEL = """# Travel policy

## Hotels

The hotel limit is 180 EUR per night in capital cities and 120 EUR elsewhere.

## Error codes

E-104 means the booking tool could not reach the travel agency.
"""

# one long section: several passages (children) under one parent, to have neighbours
LEAVE = """# Employee handbook

## Annual leave

Every employee gets fifteen days of annual leave per calendar year. Leave requests go to the
line manager at least two weeks ahead. Up to five unused days can be carried over to the next
year; carried-over days expire at the end of March. Part-time staff get leave in proportion to
their contract. Leave cannot be paid out except when the contract ends. Public holidays that
fall inside a leave period are not counted as leave days.

## 年假

员工每年享有十五天年假，未使用的年假最多可结转五天。
"""

OTHER = "# Secret plans\n\nThe launch date of project Falcon is the third of May.\n"


def _ragsift(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ragsift_command(), *args, "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **env})


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("docs")
    (docs / "travel.md").write_text(TRAVEL, encoding="utf-8")
    (docs / "leave.md").write_text(LEAVE, encoding="utf-8")
    (docs / "travel.md.meta.json").write_text('{"dept": "travel"}', encoding="utf-8")
    (docs / "leave.md.meta.json").write_text('{"dept": "hr", "year": 2024}', encoding="utf-8")
    (docs / "other").mkdir()
    (docs / "other" / "plans.md").write_text(OTHER, encoding="utf-8")
    data = tmp_path_factory.mktemp("data")
    small = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}
    done = _ragsift(data, "ingest", str(docs / "travel.md"), str(docs / "leave.md"),
                    "--kb", "handbook", **small)
    assert done.returncode == 0, done.stderr
    done = _ragsift(data, "ingest", str(docs / "other"), "--kb", "other", **small)
    assert done.returncode == 0, done.stderr
    return data


@pytest.fixture(scope="module")
def handbook_key(data_dir: Path) -> str:
    """A reader key that may reach only the handbook KB."""
    done = _ragsift(data_dir, "keys", "create", "--name", "handbook-bot", "--role", "reader",
                    "--kb", "handbook")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def reader_key(data_dir: Path) -> str:
    """A reader key that may reach every KB."""
    done = _ragsift(data_dir, "keys", "create", "--name", "reader-bot", "--role", "reader")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


@asynccontextmanager
async def _stdio(data_dir: Path, errlog: Path, *args: str, **env: str
                 ) -> AsyncIterator[ClientSession]:
    command, *rest = ragsift_command()
    # the SDK starts the server with a minimal environment: keep PYTHONPATH, so that it runs
    # the source under test (a worktree's src/) rather than the installed package
    inherited = {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ}
    params = StdioServerParameters(command=command, args=[*rest, "mcp", "--data-dir",
                                                         str(data_dir), *args],
                                   env={**inherited, **env})
    with errlog.open("a") as log:
        async with stdio_client(params, errlog=log) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return dict(result.structured_content)


def _error_text(result: CallToolResult) -> str:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_stdio_lists_the_tools_with_argument_and_result_schemas(
    data_dir: Path, tmp_path: Path
) -> None:
    async def check() -> None:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {"search", "explain", "list_knowledge_bases", "get_chunk"}
            search = tools["search"].input_schema
            assert search["required"] == ["query"]
            assert {"kb", "top_k", "mode", "document_ids", "rerank", "filter"} <= set(
                search["properties"])
            assert "filter" in tools["explain"].input_schema["properties"]
            assert "ctx" not in search["properties"]
            assert tools["get_chunk"].input_schema["required"] == ["chunk_id"]
            for tool in tools.values():
                assert tool.description and tool.output_schema is not None
                assert tool.annotations is not None and tool.annotations.read_only_hint
            assert "citation" in json.dumps(tools["search"].output_schema)
            explain_schema = tools["explain"].output_schema
            assert explain_schema is not None and "trace" in explain_schema["properties"]

    _run(check)


def test_stdio_search_returns_evidence_with_citations_and_takes_a_metadata_filter(
    data_dir: Path, tmp_path: Path
) -> None:
    async def check() -> tuple[dict[str, Any], dict[str, Any], str, dict[str, Any]]:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            found = _data(await session.call_tool(
                "search", {"query": "hotel limit per night", "kb": "handbook", "top_k": 3}))
            both = _data(await session.call_tool("search", {
                "query": "launch date of project Falcon", "kbs": ["handbook", "other"],
                "faq": False}))
            filtered = _data(await session.call_tool("search", {
                "query": "hotel limit per night", "kb": "handbook", "faq": False,
                "filter": {"$or": [{"dept": "hr"}, {"dept": {"$startswith": "x"}}]}}))
            refused = _error_text(await session.call_tool("explain", {
                "query": "hotel", "kb": "handbook", "filter": {"year": {"$gt": True}}}))
            return found, filtered, refused, both

    found, filtered, refused, both = _run(check)
    # several KBs: one ranking, each result names its KB
    assert both["kb"] == "handbook+other"
    assert both["results"][0]["kb"] == "other" and "Falcon" in both["results"][0]["text"]
    assert {r["kb"] for r in both["results"]} == {"handbook", "other"}
    assert filtered["results"]
    assert {r["citation"]["file"] for r in filtered["results"]} == {"leave.md"}
    assert filtered["results"][0]["metadata"] == {"dept": "hr", "year": 2024}
    assert found["results"][0]["metadata"] == {"dept": "travel"}
    assert "filter.year.$gt" in refused
    assert found["kb"] == "handbook" and found["query"] == "hotel limit per night"
    best = found["results"][0]
    assert "180 EUR" in best["text"] and best["rank"] == 1
    citation = best["citation"]
    assert citation["file"] == "travel.md"
    assert citation["section"] == ["Travel policy", "Hotels"]
    assert citation["chunk_id"] and citation["document_id"]
    assert citation["label"] == "travel.md › Travel policy › Hotels"
    assert set(citation["locator"]) == {"page", "sheet", "cell_range", "slide", "boxes",
                                        "record", "pointer"}


def test_stdio_explain_adds_every_score_and_a_trace_summary(
    data_dir: Path, tmp_path: Path
) -> None:
    async def check() -> dict[str, Any]:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            return _data(await session.call_tool(
                "explain", {"query": "年假可以结转几天", "kb": "handbook", "top_k": 2}))

    explained = _run(check)
    best = explained["results"][0]
    assert "结转" in best["text"] and best["citation"]["file"] == "leave.md"
    assert best["dense_rank"] is not None and best["fusion_score"] == best["score"]
    assert 0.0 <= explained["results"][1]["relevance"] <= best["relevance"] <= 1.0
    trace = explained["trace"]
    assert trace["mode"] == "hybrid" and trace["returned_count"] == 2
    # the handbook is mostly English: a Chinese query also searches the second dense channel
    assert {c["list_name"] for c in trace["channels"]} == {
        "dense:original", "sparse:original", "second_dense:original"}
    assert trace["stages"]["rerank"]["status"] == "off" and trace["degradations"] == []
    assert "total" in trace["timings_ms"]


def test_stdio_lists_knowledge_bases_with_their_counts(data_dir: Path, tmp_path: Path) -> None:
    async def check() -> dict[str, Any]:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            return _data(await session.call_tool("list_knowledge_bases", {}))

    listed = {kb["name"]: kb for kb in _run(check)["knowledge_bases"]}
    assert set(listed) == {"handbook", "other"}
    assert listed["handbook"]["documents"] == 2 and listed["handbook"]["ready"] == 2
    assert listed["handbook"]["uri"] == "ragsift://kb/handbook"


def test_get_chunk_returns_the_chunk_with_its_section_and_neighbours(
    data_dir: Path, tmp_path: Path
) -> None:
    async def check() -> tuple[dict[str, Any], dict[str, Any]]:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            found = _data(await session.call_tool("search", {
                "query": "carried over unused days expire", "kb": "handbook", "top_k": 1,
                "mode": "sparse"}))
            chunk_id = found["results"][0]["citation"]["chunk_id"]
            return found, _data(await session.call_tool(
                "get_chunk", {"chunk_id": chunk_id, "window": 2}))

    found, context = _run(check)
    chunk = context["chunk"]
    assert chunk["chunk_id"] == found["results"][0]["citation"]["chunk_id"]
    assert chunk["level"] == "passage" and chunk["citation"]["file"] == "leave.md"
    assert context["kb"] == "handbook"
    parent = context["parent"]
    assert parent["level"] == "section" and chunk["text"].split()[0] in parent["text"]
    neighbours = context["previous"] + context["next"]
    assert neighbours, "the long section has several passages"
    assert all(n["citation"]["section"] == chunk["citation"]["section"] for n in neighbours)
    assert all(n["ordinal"] < chunk["ordinal"] for n in context["previous"])
    assert all(n["ordinal"] > chunk["ordinal"] for n in context["next"])


def test_kb_resource_describes_the_knowledge_base_and_its_documents(
    data_dir: Path, tmp_path: Path
) -> None:
    async def check() -> tuple[list[str], str]:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            templates = (await session.list_resource_templates()).resource_templates
            read = await session.read_resource("ragsift://kb/handbook")
            content = read.contents[0]
            assert isinstance(content, TextResourceContents)
            assert content.mime_type == "application/json"
            return [t.uri_template for t in templates], content.text

    templates, text = _run(check)
    assert templates == ["ragsift://kb/{name}"]
    described = json.loads(text)
    assert described["name"] == "handbook" and described["embedding_dim"] > 0
    assert {d["filename"]: d["status"] for d in described["documents"]} == {
        "travel.md": "READY", "leave.md": "READY"}


def test_bad_input_is_a_tool_error_saying_why_and_the_server_keeps_serving(
    data_dir: Path, tmp_path: Path
) -> None:
    async def check() -> dict[str, str]:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            calls: dict[str, tuple[str, dict[str, Any]]] = {
                "empty": ("search", {"query": "  ", "kb": "handbook"}),
                "punctuation": ("search", {"query": "？！", "kb": "handbook"}),
                "too_long": ("search", {"query": "hotel " * 400, "kb": "handbook"}),
                "unknown_kb": ("search", {"query": "hotel", "kb": "nope"}),
                "no_kb": ("search", {"query": "hotel"}),
                "top_k": ("search", {"query": "hotel", "kb": "handbook", "top_k": 0}),
                "mode": ("explain", {"query": "hotel", "kb": "handbook", "mode": "fuzzy"}),
                "version": ("search", {"query": "hotel", "kb": "handbook", "kb_version": 99}),
                "chunk": ("get_chunk", {"chunk_id": "no-such-chunk"}),
            }
            errors = {name: _error_text(await session.call_tool(tool, arguments))
                      for name, (tool, arguments) in calls.items()}
            with pytest.raises(MCPError, match="unknown knowledge base 'nope'"):
                await session.read_resource("ragsift://kb/nope")
            # still serving
            _data(await session.call_tool("search", {"query": "E-104", "kb": "handbook"}))
            return errors

    errors = _run(check)
    assert "query is empty" in errors["empty"]
    assert "no letters or digits" in errors["punctuation"]
    assert "query" in errors["too_long"] and "1000" in errors["too_long"]
    assert "unknown knowledge base 'nope' (known: handbook, other)" in errors["unknown_kb"]
    assert "name a knowledge base (`kb`): handbook, other" in errors["no_kb"]
    assert "top_k" in errors["top_k"] and "greater than or equal to 1" in errors["top_k"]
    assert "mode" in errors["mode"]
    assert "version 99" in errors["version"] and "not retained" in errors["version"]
    assert "chunk 'no-such-chunk' does not exist" in errors["chunk"]


def test_stdout_carries_only_protocol_messages(data_dir: Path) -> None:
    """A dense search loads the embedding model: nothing it says may reach stdout."""
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "hotel limit", "kb": "handbook"}}},
    ]
    process = subprocess.Popen([*ragsift_command(), "mcp", "--data-dir", str(data_dir)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    replies: list[dict[str, Any]] = []
    try:
        for message in messages:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            if "id" in message:
                replies.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        rest = process.stdout.read()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert rest == ""
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[0]["result"]["serverInfo"]["name"] == "ragsift"
    assert replies[1]["result"]["structuredContent"]["results"][0]["citation"]["file"] \
        == "travel.md"


def test_stdio_api_key_scope_is_the_ceiling_of_every_call(
    data_dir: Path, handbook_key: str, tmp_path: Path
) -> None:
    async def other_chunk() -> str:
        async with _stdio(data_dir, tmp_path / "err.log") as session:
            found = _data(await session.call_tool(
                "search", {"query": "Falcon", "kb": "other", "mode": "sparse"}))
            return str(found["results"][0]["citation"]["chunk_id"])

    async def check(chunk_id: str) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        async with _stdio(data_dir, tmp_path / "err.log",
                          RAGSIFT_API_KEY=handbook_key) as session:
            listed = _data(await session.call_tool("list_knowledge_bases", {}))
            refused = [_error_text(await session.call_tool(tool, arguments)) for tool, arguments
                       in (("search", {"query": "launch date of Falcon", "kb": "other"}),
                           ("search", {"query": "Falcon", "kbs": ["handbook", "other"]}),
                           ("get_chunk", {"chunk_id": chunk_id}))]
            with pytest.raises(MCPError, match="may not use knowledge base"):
                await session.read_resource("ragsift://kb/other")
            # the only KB the key reaches is the default
            found = _data(await session.call_tool("search", {"query": "hotel limit"}))
            return listed, refused, found

    chunk_id = _run(other_chunk)
    listed, refused, found = _run(lambda: check(chunk_id))
    assert [kb["name"] for kb in listed["knowledge_bases"]] == ["handbook"]
    for message in refused:
        assert "forbidden" in message and "handbook-bot" in message, message
    assert found["kb"] == "handbook"


def test_a_keys_data_scope_decides_which_documents_it_sees() -> None:
    now = datetime.now(UTC)

    def key(**scope: tuple[str, ...]) -> ApiKey:
        return ApiKey(id="k", name="k", role=Role.READER, scope=KeyScope(**scope), hint="rs_",
                      created_at=now)

    def document(**scope: Any) -> Document:
        return Document(id="d", kb_id="kb", filename="a.md", media_type="text/markdown",
                        sha256=None, size=1, status=DocumentStatus.READY,
                        scope=DocumentScope(**scope))

    acme = document(tenant_id="acme", allowed_roles=("hr",))
    assert document_visible(acme, None) and document_visible(acme, key())
    assert document_visible(acme, key(tenant_ids=("acme", "beta"), data_roles=("hr",)))
    assert not document_visible(acme, key(tenant_ids=("beta",)))
    assert not document_visible(acme, key(data_roles=("finance",)))
    assert not document_visible(document(), key(dataset_ids=("d1",)))
    assert document_visible(document(), key(data_roles=("finance",)))  # unrestricted document


def test_a_citation_label_names_the_file_section_and_locator() -> None:
    assert citation_label("a.md", [], Locator()) == "a.md"
    assert citation_label("r.pdf", ["Intro", "Scope"], Locator(page=3)) \
        == "r.pdf › Intro › Scope, p. 3"
    assert citation_label("t.xlsx", [], Locator(sheet="Q1", cell_range="A1:C9")) \
        == "t.xlsx, sheet Q1!A1:C9"
    assert citation_label("s.pptx", ["Plan"], Locator(slide=2)) == "s.pptx › Plan, slide 2"


def test_stdio_with_an_unknown_api_key_exits_2(data_dir: Path) -> None:
    done = _ragsift(data_dir, "mcp", RAGSIFT_API_KEY="rs_" + "x" * 43)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown, revoked or expired" in done.stderr
    assert done.stdout == ""


@contextmanager
def _http_server(data_dir: Path, log: Path, *args: str, **env: str) -> Iterator[str]:
    port = free_port()
    command = [*ragsift_command(), "mcp", "--transport", "streamable-http", "--host",
               "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir), *args]
    base = f"http://127.0.0.1:{port}"
    with running(command, log, base, {**os.environ, **env}, timeout_s=60):
        yield f"{base}/mcp"


@asynccontextmanager
async def _http_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_streamable_http_needs_a_key_and_applies_its_scope(
    data_dir: Path, handbook_key: str, tmp_path: Path
) -> None:
    with _http_server(data_dir, tmp_path / "server.log", RAGSIFT_AUTH="true") as url:
        missing = httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        assert missing.json() == {"code": "unauthorized",
                                  "message": "missing Authorization: Bearer header"}
        wrong = httpx.post(url, json=INITIALIZE, headers={
            **MCP_HEADERS, "Authorization": "Bearer rs_" + "y" * 43})
        assert wrong.status_code == 401 and "unknown, revoked or expired" in wrong.text
        in_url = httpx.post(f"{url}?api_key={handbook_key}", json=INITIALIZE, headers=MCP_HEADERS)
        assert in_url.status_code == 401 and "never in the URL" in in_url.text
        rebound = httpx.post(url, json=INITIALIZE, headers={
            **MCP_HEADERS, "Authorization": f"Bearer {handbook_key}",
            "Host": "attacker.example"})
        assert rebound.status_code == 421  # a DNS-rebinding page names its own host
        cross_site = httpx.post(url, json=INITIALIZE, headers={
            **MCP_HEADERS, "Authorization": f"Bearer {handbook_key}",
            "Origin": "http://attacker.example"})
        assert cross_site.status_code == 403

        async def without_key() -> None:
            async with _http_session(url, None):
                pass

        with pytest.raises(BaseException) as refused:
            _run(without_key)
        assert refused.group_contains(MCPError) if isinstance(
            refused.value, BaseExceptionGroup) else isinstance(refused.value, MCPError)

        async def with_key() -> tuple[set[str], dict[str, Any], str, dict[str, Any]]:
            async with _http_session(url, handbook_key) as session:
                tools = {tool.name for tool in (await session.list_tools()).tools}
                found = _data(await session.call_tool(
                    "search", {"query": "E-104", "kb": "handbook", "mode": "sparse"}))
                refused = _error_text(await session.call_tool(
                    "search", {"query": "Falcon", "kb": "other", "mode": "sparse"}))
                listed = _data(await session.call_tool("list_knowledge_bases", {}))
                return tools, found, refused, listed

        tools, found, refused_kb, listed = _run(with_key)
        assert tools == {"search", "explain", "list_knowledge_bases", "get_chunk"}
        assert found["results"][0]["citation"]["section"] == ["Travel policy", "Error codes"]
        assert "forbidden" in refused_kb and "may not use knowledge base" in refused_kb
        assert [kb["name"] for kb in listed["knowledge_bases"]] == ["handbook"]


def test_streamable_http_scopes_the_newer_stateless_protocol_and_binds_sessions_to_keys(
    data_dir: Path, handbook_key: str, reader_key: str, tmp_path: Path
) -> None:
    with _http_server(data_dir, tmp_path / "server.log", RAGSIFT_AUTH="true") as url:
        async def stateless() -> tuple[str | None, dict[str, Any]]:
            headers = {"Authorization": f"Bearer {handbook_key}"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                listed = _data(await client.call_tool("list_knowledge_bases", {}))
                return client.session.protocol_version, listed

        version, listed = _run(stateless)
        assert version is not None and version >= "2026-07-28"  # no initialize handshake
        assert [kb["name"] for kb in listed["knowledge_bases"]] == ["handbook"]

        opened = httpx.post(url, json=INITIALIZE, headers={
            **MCP_HEADERS, "Authorization": f"Bearer {handbook_key}"})
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        other = httpx.post(url, json=listing, headers={
            **MCP_HEADERS, "Authorization": f"Bearer {reader_key}", "Mcp-Session-Id": session})
        assert other.status_code == 404  # another key's session is not there for it


def test_streamable_http_without_keys_is_allowed_on_loopback_only(
    data_dir: Path, tmp_path: Path
) -> None:
    # with spans to the console: `ragsift mcp` makes a server span per request as serve does
    with _http_server(data_dir, tmp_path / "server.log", "--no-auth", RAGSIFT_AUTH="true",
                      RAGSIFT_OTEL_EXPORTER="console") as url:
        async def listed() -> dict[str, Any]:
            async with _http_session(url, None) as session:
                return _data(await session.call_tool("list_knowledge_bases", {}))

        assert {kb["name"] for kb in _run(listed)["knowledge_bases"]} == {"handbook", "other"}
        assert "API keys OFF" in (tmp_path / "server.log").read_text()
    log = (tmp_path / "server.log").read_text()  # the spans are flushed as the server exits
    assert '"name": "POST /mcp"' in log and '"kind": "SpanKind.SERVER"' in log
    done = _ragsift(data_dir, "mcp", "--transport", "streamable-http", "--host", "0.0.0.0",
                    "--port", str(free_port()), "--no-auth")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing to serve MCP on 0.0.0.0 without API keys" in done.stderr


def test_importing_the_cli_does_not_import_the_mcp_sdk() -> None:
    code = ("import sys, ragsift.cli; "
            "sys.exit(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.fixture(scope="module")
def served(data_dir: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[LiveServer, OtlpReceiver]]:
    """`ragsift serve` on the module's data (keys on), exporting spans over OTLP/HTTP to a
    receiver in this process (exported every 100 ms)."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with otlp_receiver() as receiver, serving(
            data_dir, log, RAGSIFT_AUTH="true", RAGSIFT_OTEL_EXPORTER="otlp",
            RAGSIFT_OTEL_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="100") as server:
        yield server, receiver


def test_serve_answers_mcp_at_slash_mcp_with_the_api_keys_and_their_scope(
    served: tuple[LiveServer, OtlpReceiver], handbook_key: str
) -> None:
    """MCP on the API's own port: the REST API's keys, a key's KB scope the ceiling of every
    tool call, and the Host and Origin checks of `ragsift mcp`."""
    server, _ = served
    url = f"{server.url}/mcp"
    missing = httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    keyed = {**MCP_HEADERS, "Authorization": f"Bearer {handbook_key}"}
    cross_site = httpx.post(url, json=INITIALIZE,
                            headers={**keyed, "Origin": "http://attacker.example"})
    assert cross_site.status_code == 403
    rebound = httpx.post(url, json=INITIALIZE, headers={**keyed, "Host": "attacker.example"})
    assert rebound.status_code == 400  # the API's Host check answers before MCP's own
    rest = httpx.post(f"{server.url}/api/retrieval/search", json={"query": "Falcon",
                      "kb": "other"}, headers={"Authorization": f"Bearer {handbook_key}"})
    assert rest.status_code == 403  # the REST API refuses the same key the same KB

    async def with_key() -> tuple[set[str], dict[str, Any], str]:
        async with _http_session(url, handbook_key) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            found = _data(await session.call_tool(
                "search", {"query": "E-104", "kb": "handbook", "mode": "sparse"}))
            refused = await session.call_tool(
                "search", {"query": "Falcon", "kb": "other", "mode": "sparse"})
            assert refused.structured_content is None
            return tools, found, _error_text(refused)

    tools, found, refused_kb = _run(with_key)
    assert tools == {"search", "explain", "list_knowledge_bases", "get_chunk"}
    assert found["results"][0]["citation"]["section"] == ["Travel policy", "Error codes"]
    assert "forbidden" in refused_kb and "may not use knowledge base" in refused_kb
    assert "Falcon" not in refused_kb and "third of May" not in refused_kb


def test_serve_exports_an_mcp_calls_spans_over_otlp_in_the_callers_trace(
    served: tuple[LiveServer, OtlpReceiver], handbook_key: str
) -> None:
    """A real OTLP/HTTP exporter to a receiver decoding its protobuf: the MCP request's
    server span is a child of the caller's traceparent, the search span a child of it."""
    server, receiver = served
    trace_id, caller = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"

    async def search() -> None:
        headers = {"Authorization": f"Bearer {handbook_key}",
                   "traceparent": f"00-{trace_id}-{caller}-01"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
                streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            _data(await session.call_tool("search", {"query": "E-104", "kb": "handbook"}))

    _run(search)

    def ours(spans: list[tuple[str, Any]]) -> bool:  # the search's span and its parent's
        ids = {span.span_id for _, span in spans}
        return any(span.name == "ragsift.search" and span.trace_id.hex() == trace_id
                   and span.parent_span_id in ids for _, span in spans)

    spans = [(service, span) for service, span in receiver.wait_for(ours)
             if span.trace_id.hex() == trace_id]
    assert {service for service, _ in spans} == {"ragsift"}
    servers = [span for _, span in spans if span.name == "POST /mcp"]
    assert servers and all(span.parent_span_id.hex() == caller for span in servers)
    attributes = {a.key: a.value for a in servers[0].attributes}
    assert attributes["http.route"].string_value == "/mcp"
    assert attributes["http.response.status_code"].int_value == 200
    assert attributes["server.address"].string_value == "127.0.0.1"
    [searched] = [span for _, span in spans if span.name == "ragsift.search"]
    # the request that called the tool (not the session's first, say)
    calling = max((span for span in servers
                   if span.start_time_unix_nano <= searched.start_time_unix_nano),
                  key=lambda span: span.start_time_unix_nano)
    assert searched.parent_span_id == calling.span_id and len(servers) >= 3
    assert any(span.parent_span_id == searched.span_id for _, span in spans
               if span.name.startswith("ragsift.stage."))
