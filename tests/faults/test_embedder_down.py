"""A hosted embedder that cannot be reached fails the dense channel, never the process.

The KB is built through the real OpenAI-compatible model-server process (so its record holds
the embedding model and dimension); then `ragsift serve` and the CLI start with
RAGSIFT_OPENAI_BASE_URL on a closed local port and no RAGSIFT_OPENAI_EMBEDDING_DIM, which
once made startup probe the embedder for its dimension and exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from retrieval.real_stack import closed_port
from support.fixtures import LLMServer
from support.serve import free_port, ragsift_command, running

HANDBOOK = """# Travel policy

## Hotels

The hotel limit per night is 150 dollars in most cities and 220 dollars in London.
Keep the itemised hotel invoice for every stay.

## Meals

Meals are reimbursed up to 60 dollars a day with receipts.
"""
QUERY = "hotel limit per night"


def _env(data_dir: Path, base_url: str) -> dict[str, str]:
    """The test's environment: no RAGSIFT_ setting leaks in, and no embedding dimension."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSIFT_")}
    env.update(RAGSIFT_DATA_DIR=str(data_dir), RAGSIFT_EMBEDDER="openai",
               RAGSIFT_OPENAI_BASE_URL=base_url, RAGSIFT_PREPARE_WORKERS="1",
               RAGSIFT_AUTH="false", RAGSIFT_EMBED_RETRY_BUDGET_S="2")
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragsift.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer) -> Path:
    """A data dir whose KB "travel" was ingested through the reachable model server (the
    dimension was probed then, not configured)."""
    llm_server_process.reset()
    tmp_path = tmp_path_factory.mktemp("embedder_down")
    (tmp_path / "travel.md").write_text(HANDBOOK, encoding="utf-8")
    data_dir = tmp_path / "data"
    done = _cli(_env(data_dir, f"{llm_server_process.url}/v1"),
                "ingest", str(tmp_path / "travel.md"), "--kb", "travel")
    assert done.returncode == 0, done.stderr
    return data_dir


@pytest.fixture(scope="module")
def down(built: Path) -> dict[str, str]:
    """The same data dir with the embedder on a port nothing listens on."""
    return _env(built, f"http://127.0.0.1:{closed_port()}/v1")


@pytest.fixture(scope="module")
def server(built: Path, down: dict[str, str]) -> Iterator[httpx.Client]:
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    with running(command, built.parent / "server.log", url, down, timeout_s=90), \
            httpx.Client(base_url=url, timeout=30) as client:
        yield client


def test_serve_starts_with_the_embedder_down_and_readyz_says_so(server: httpx.Client) -> None:
    ready = server.get("/readyz")

    # still 200: the sparse channel serves every KB, so a load balancer keeps sending
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "degraded"
    assert body["checks"]["embedder"].startswith("down: embedding server unreachable")
    assert body["checks"]["database"] == "ok" and body["checks"]["index"] == "ok"


def test_sparse_search_answers_with_the_embedder_down(server: httpx.Client) -> None:
    hits = server.post("/api/retrieval/search",
                       json={"kb": "travel", "query": QUERY, "mode": "sparse"})

    assert hits.status_code == 200, hits.text
    assert "150 dollars" in hits.json()[0]["text"]


def test_hybrid_search_degrades_to_bm25_with_the_embedder_down(server: httpx.Client) -> None:
    explained = server.post("/api/retrieval/explain",
                            json={"kb": "travel", "query": QUERY, "mode": "hybrid"})

    assert explained.status_code == 200, explained.text
    body = explained.json()
    assert "150 dollars" in body["results"][0]["text"]
    assert body["results"][0]["retrieval_sources"] == ["sparse:original"]
    codes = [d["code"] for d in body["trace"]["degradations"]]
    assert "dense_retrieval_failed" in codes


def test_an_upload_with_the_embedder_down_fails_the_document_with_the_reason(
    server: httpx.Client, tmp_path: Path,
) -> None:
    kb_id = server.get("/api/kbs").json()[0]["id"]
    upload = server.post(f"/api/kbs/{kb_id}/documents", files={
        "files": ("meals.md", b"# Meals\n\nDinner is reimbursed up to 40 dollars.\n")})
    assert upload.status_code == 202, upload.text
    [document] = upload.json()["documents"]

    deadline = time.monotonic() + 60
    while (state := server.get(f"/api/documents/{document['id']}").json())["status"] not in (
            "READY", "FAILED"):
        assert time.monotonic() < deadline, state
        time.sleep(0.2)

    assert state["status"] == "FAILED"
    assert "embedding server unreachable" in state["error"]


def test_the_cli_explains_sparse_and_degrades_hybrid_with_the_embedder_down(
    down: dict[str, str],
) -> None:
    sparse = _cli(down, "explain", QUERY, "--kb", "travel", "--mode", "sparse", "--json")
    assert sparse.returncode == 0, sparse.stderr
    assert "150 dollars" in json.loads(sparse.stdout)["results"][0]["text"]

    hybrid = _cli(down, "explain", QUERY, "--kb", "travel", "--json")  # the default mode
    assert hybrid.returncode == 0, hybrid.stderr
    explained = json.loads(hybrid.stdout)
    assert "150 dollars" in explained["results"][0]["text"]
    assert "dense_retrieval_failed" in [d["code"] for d in explained["trace"]["degradations"]]

    search = _cli(down, "search", QUERY, "--kb", "travel", "--json")
    assert search.returncode == 0, search.stderr
    assert "150 dollars" in json.loads(search.stdout)[0]["text"]


def test_without_a_recorded_dimension_the_cli_names_the_setting_instead_of_crashing(
    tmp_path: Path,
) -> None:
    fresh = _env(tmp_path / "data", f"http://127.0.0.1:{closed_port()}/v1")
    # a listing opens only the database: it needs no embedder, so it works
    assert _cli(fresh, "kb", "list").returncode == 0

    done = _cli(fresh, "search", "hello", "--kb", "travel")

    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())  # rich wraps long lines
    assert "no knowledge base records it" in message
    assert "RAGSIFT_OPENAI_EMBEDDING_DIM" in message
