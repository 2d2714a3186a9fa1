"""Commands that only read run beside `ragsift serve` on its data directory (the index opens
read-only and follows the server's writes); commands that write are still refused."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from support.live_server import serving
from support.serve import ragsift_command

SMALL = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}
HOTELS = b"# Travel\n\n## Hotels\n\nThe hotel limit per night is 150 dollars in most cities.\n"
FALCON = b"# Plans\n\nThe launch date of project Falcon is the third of May.\n"


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ragsift_command(), *args, "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **SMALL})


def _upload(client: httpx.Client, kb_id: str, name: str, body: bytes) -> str:
    upload = client.post(f"/api/kbs/{kb_id}/documents", files={"files": (name, body)})
    assert upload.status_code == 202, upload.text
    document_id: str = upload.json()["documents"][0]["id"]
    deadline = time.monotonic() + 60
    while client.get(f"/api/documents/{document_id}").json()["status"] != "READY":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return document_id


async def _mcp_searches(data_dir: Path, log: Path, between: Any) -> list[dict[str, Any]]:
    """Two searches in one `ragsift mcp` session, `between()` run between them."""
    command, *rest = ragsift_command()
    params = StdioServerParameters(command=command, args=[*rest, "mcp", "--data-dir",
                                                         str(data_dir)], env=dict(os.environ))
    found = []
    with log.open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            for query in ("hotel limit per night", "launch date of project Falcon"):
                result = await session.call_tool("search", {"query": query, "kb": "handbook",
                                                            "top_k": 1})
                assert not result.is_error, result.content
                assert isinstance(result.structured_content, dict)
                found.append(result.structured_content)
                if len(found) == 1:
                    await anyio.to_thread.run_sync(between)
    return found


def test_search_listings_and_mcp_run_beside_serve_and_see_its_new_documents(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serving(data, tmp_path / "server.log", **SMALL) as server, \
            httpx.Client(base_url=server.url, timeout=30) as client:
        kb_id = client.post("/api/kbs", json={"name": "handbook"}).json()["id"]
        hotels = _upload(client, kb_id, "hotels.md", HOTELS)

        done = _cli(data, "search", "hotel limit per night", "--kb", "handbook", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[0]["document_id"] == hotels
        listed = _cli(data, "docs", "list", "--kb", "handbook")
        assert listed.returncode == 0, listed.stderr
        assert f"{hotels}" in listed.stdout and "READY" in listed.stdout

        # a long-lived reader: the document uploaded between its two searches is found
        falcon: list[str] = []
        first, second = anyio.run(_mcp_searches, data, tmp_path / "mcp.log",
                                  lambda: falcon.append(_upload(client, kb_id, "falcon.md",
                                                                FALCON)))
        assert first["results"][0]["citation"]["document_id"] == hotels
        assert second["results"][0]["citation"]["document_id"] == falcon[0]

        refused = _cli(data, "docs", "delete", hotels, "--kb", "handbook")
        assert refused.returncode != 0
        assert "open in another ragsift process" in refused.stderr + refused.stdout
        assert client.get(f"/api/documents/{hotels}").json()["status"] == "READY"
