"""`ragsift search/explain --server URL`: the search runs in a live `ragsift serve` (auth on)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.api_helpers import HOTELS
from ragsift.client import RagsiftClient
from support.live_server import LiveServer, create_key, serving


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str, str]]:
    root = tmp_path_factory.mktemp("cli_remote")
    key = create_key(root / "data", "admin", "admin")
    with serving(root / "data", root / "server.log", RAGSIFT_AUTH="true") as server:
        with RagsiftClient(server.url, api_key=key) as client:
            kb = client.create_kb("handbook")
            [hotels] = client.wait_until_ready(client.upload_documents(
                kb.id, [("hotels.md", HOTELS)]))
            assert hotels.status == "READY", server.log_text()
        yield server, key, hotels.id


def _cli(*args: str, api_key: str | None,
         server: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_API_KEY", "RAGSIFT_SERVER")}
    if api_key is not None:
        env["RAGSIFT_API_KEY"] = api_key
    if server is not None:
        env["RAGSIFT_SERVER"] = server
    return subprocess.run([sys.executable, "-m", "ragsift.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def test_search_json_through_the_server_is_the_plain_hits_array(
    served: tuple[LiveServer, str, str], tmp_path: Path,
) -> None:
    server, key, hotels_id = served

    # an empty data directory: the hits can only have come from the server
    done = _cli("search", "hotel limit per night", "--kb", "handbook", "--top-k", "2",
                "--json", "--server", server.url, "--data-dir", str(tmp_path),
                api_key=key)

    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert isinstance(hits, list) and hits[0]["document_id"] == hotels_id


def test_the_server_may_be_named_once_in_the_environment(
    served: tuple[LiveServer, str, str], tmp_path: Path,
) -> None:
    server, key, hotels_id = served

    done = _cli("search", "hotel limit per night", "--kb", "handbook", "--json",
                "--data-dir", str(tmp_path), api_key=key, server=server.url)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["document_id"] == hotels_id
    # set but empty: none, so the (empty) data directory is searched
    local = _cli("search", "hotel limit per night", "--kb", "handbook", "--json",
                 "--data-dir", str(tmp_path), api_key=key, server="")
    assert local.returncode == 2 and "unknown knowledge base" in local.stderr


def test_explain_through_the_server_renders_the_trace(
    served: tuple[LiveServer, str, str],
) -> None:
    server, key, _ = served

    as_json = _cli("explain", "hotel limit", "--kb", "handbook", "--json",
                   "--server", server.url, "--api-key", key, api_key=None)
    as_tables = _cli("explain", "hotel limit", "--kb", "handbook", "--server", server.url,
                     api_key=key)

    assert as_json.returncode == 0, as_json.stderr
    assert set(json.loads(as_json.stdout)) == {"results", "faq", "trace"}
    assert as_tables.returncode == 0, as_tables.stderr
    assert "hotels.md" in as_tables.stdout


def test_server_refusals_exit_2_with_the_servers_code(
    served: tuple[LiveServer, str, str],
) -> None:
    server, key, _ = served

    bad_key = _cli("search", "hotel", "--kb", "handbook", "--server", server.url,
                   api_key="rs_wrong")
    unknown_kb = _cli("search", "hotel", "--kb", "nope", "--server", server.url, api_key=key)
    bad_option = _cli("search", "hotel", "--kb", "handbook", "--top-k", "0",
                      "--server", server.url, api_key=key)

    assert bad_key.returncode == 2 and "unauthorized" in bad_key.stderr
    assert unknown_kb.returncode == 2 and "not_found" in unknown_kb.stderr
    assert bad_option.returncode == 2 and "top_k" in bad_option.stderr
