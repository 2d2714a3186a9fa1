"""Ingest through a rate-limited OpenAI-compatible embedder (the real model-server process):
the CLI waits out a run of 429s, and a document whose embedder stays overloaded past
RAGSIFT_EMBED_RETRY_BUDGET_S ends FAILED with the reason.

A hosted embedder's minute of 429s is scripted as 20 answers with Retry-After 0.25 s (about
5 s), to keep the suite fast; that the default budget and attempts cover a full minute of
1-s Retry-Afters is shown on a stepped clock in tests/adapters/test_http_post.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from support.fixtures import LLMServer

POLICY = """# Travel policy

## Hotels

The hotel limit per night is 150 dollars in most cities and 220 dollars in London and Tokyo.
Keep the itemised hotel invoice for every stay.

## 报销

差旅费用须在出差结束后 30 天内提交报销申请，住宿标准为每晚 500 元。
"""


def _cli(data_dir: Path, server: LLMServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSIFT_")}
    env.update(
        RAGSIFT_DATA_DIR=str(data_dir), RAGSIFT_EMBEDDER="openai",
        RAGSIFT_OPENAI_BASE_URL=f"{server.url}/v1", RAGSIFT_OPENAI_EMBEDDING_DIM="384",
        RAGSIFT_PREPARE_WORKERS="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "ragsift.cli", *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )


def test_the_cli_ingest_waits_out_a_run_of_429s_and_the_document_is_ready(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    (tmp_path / "policy.md").write_text(POLICY, encoding="utf-8")
    llm_server.control(
        faults={"embeddings": {"status": 429, "retry_after": "0.25", "times": 20}}
    )
    done = _cli(tmp_path / "data", llm_server, "ingest", str(tmp_path / "policy.md"),
                "--kb", "travel")
    assert done.returncode == 0, done.stderr
    listed = _cli(tmp_path / "data", llm_server, "docs", "list", "--kb", "travel", "--json")
    (document,) = json.loads(listed.stdout)
    assert document["status"] == "READY" and document["error"] is None

    attempts = llm_server.attempts("embeddings")
    answers = [attempt["answer"] for attempt in attempts]
    assert answers[:20] == [429] * 20 and set(answers[20:]) == {200}
    # every retry waited at least the Retry-After the 429 before it asked for
    assert all(b["t"] - a["t"] >= 0.25 for a, b in pairwise(attempts[:21]))


def test_a_document_whose_embedder_stays_overloaded_past_the_budget_fails_with_the_reason(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", embedder="openai", openai_base_url=f"{llm_server.url}/v1",
        openai_embedding_dim=384, embed_retry_budget_s=1.2, prepare_workers=1,
    )
    (tmp_path / "policy.md").write_text(POLICY, encoding="utf-8")
    llm_server.control(faults={"embeddings": {"status": 503, "retry_after": "0.25"}})
    container = build(settings)
    try:
        kb = container.ingestion.ensure_kb("travel")
        outcome = container.ingestion.ingest_path(kb, tmp_path / "policy.md")
    finally:
        container.close()
    assert outcome.document.status == DocumentStatus.FAILED
    assert outcome.document.error is not None
    assert "embedding server answered HTTP 503" in outcome.document.error
    assert "gave up after" in outcome.document.error
    # attempts about 0.25 s apart within a 1.2 s budget: 4 or 5, far below the 100 allowed
    assert 3 <= len(llm_server.attempts("embeddings")) <= 5
