"""A corpus, a `ragsift` process killed at a test-hook point, and the consistency checks."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.domain.requests import SearchRequest
from ragsift.faults import ENV

# Each document has a word no other has, so a search proves it is there.
CORPUS = {
    f"doc{i}.md": f"# Topic {i}\n\n" + " ".join(
        f"paragraph {j} of document {i} mentions marker{i}x and 第{i}号条款 第{j}段。"
        for j in range(12)
    )
    for i in range(6)
}


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in CORPUS.items():
        (folder / name).write_text(text, "utf-8")
    return folder


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != ENV}
    env.update(RAGSIFT_DATA_DIR=str(data_dir), RAGSIFT_CHUNK_TOKENS="48",
               RAGSIFT_CHUNK_OVERLAP_TOKENS="0", RAGSIFT_PARENT_MAX_TOKENS="96", **extra)
    return env


def run(data_dir: Path, *args: str, crash_at: str | None = None,
        timeout: float = 300, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """`ragsift ARGS` (with `env` added), killed by the test hook at `crash_at` when given."""
    env = env_for(data_dir, **(env or {}), **({ENV: crash_at} if crash_at else {}))
    return subprocess.run([sys.executable, "-m", "ragsift.cli", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)


def settings_for(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, chunk_tokens=48, chunk_overlap_tokens=0,
                    parent_max_tokens=96)


def check_consistent(data_dir: Path, kb_name: str, expected: int,
                     markers: int = len(CORPUS)) -> None:
    """Every document READY and searchable; facts, dense and BM25 hold the same chunks."""
    container = build(settings_for(data_dir))
    try:
        kb = container.repository.get_kb_by_name(kb_name)
        assert kb is not None
        documents = container.repository.list_documents(kb.id)
        assert [d.status for d in documents] == [DocumentStatus.READY] * expected, [
            (d.filename, d.status, d.error) for d in documents]
        live = sum(
            1 for d in documents for c in container.repository.list_chunks(d.id)
            if c.level == CHILD_LEVEL and c.valid_to_seq == 0
        )
        index = container.index
        assert live > 0
        assert (index.count(), index.sparse_count()) == (live, live)  # type: ignore[attr-defined]
        second = index.second_dense_count()  # type: ignore[attr-defined]
        assert second in (None, live), (second, live)  # the second channel holds them all too
        for i in range(markers):
            request = SearchRequest(query=f"marker{i}x", kb_id=kb.id, mode="sparse", top_k=3)
            hits = asyncio.run(container.retrieval.search(request)).hits
            assert hits and hits[0].filename == f"doc{i}.md", (i, hits)
    finally:
        container.close()
