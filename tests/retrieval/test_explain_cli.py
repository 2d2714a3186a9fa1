"""`ragsift explain` against the local model server: the whole trace, rewrite and rerank ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from retrieval.real_stack import handbook_data_dir
from support.fixtures import LLMServer


def test_explain_shows_the_whole_trace_with_rewrite_and_rerank(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    data_dir = handbook_data_dir(tmp_path, llm_server)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSIFT_")}
    env.update(
        RAGSIFT_DATA_DIR=str(data_dir), RAGSIFT_LLM_BASE_URL=f"{llm_server.url}/v1",
        RAGSIFT_RERANKER="http", RAGSIFT_RERANK_BASE_URL=f"{llm_server.url}/v1",
        RAGSIFT_CHUNK_TOKENS="32", RAGSIFT_CHUNK_OVERLAP_TOKENS="0",
    )

    def explain(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ragsift.cli", "explain", "hotel limit per night",
             "--kb", "policies", *extra],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )

    as_json = explain("--json")
    assert as_json.returncode == 0, as_json.stderr
    trace = json.loads(as_json.stdout)["trace"]
    assert [v["method"] for v in trace["variants"]] == ["original", "expand"]
    assert {c["list_name"] for c in trace["channels"]} == {
        "dense:original", "sparse:original", "dense:rewrite", "sparse:rewrite"
    }
    assert trace["rewrite"]["status"] == "applied" and trace["rerank"]["status"] == "applied"
    assert trace["switches_applied"]["rewrite"] and trace["switches_applied"]["rerank"]
    assert {"rewrite", "channels", "fusion", "rerank", "total"} <= set(trace["timings_ms"])

    tables = explain()
    assert tables.returncode == 0, tables.stderr
    for text in ("retrieval trace", "dense:rewrite", "per-hit scores", "rerank", "applied"):
        assert text in tables.stdout
