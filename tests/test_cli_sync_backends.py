"""`ragsift sync` on PostgreSQL facts and a milvus-lite index: the edit/delete scenario."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from ragsift.domain.requests import SearchRequest
from support.postgres import PostgresServer, postgres_or_skip


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    yield from postgres_or_skip()


def _milvus_or_skip() -> None:
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as exc:
        if os.environ.get("RAGSIFT_TEST_MILVUS") == "require":
            pytest.fail(f"RAGSIFT_TEST_MILVUS=require, but {exc}")
        pytest.skip(f"milvus-lite unavailable: {exc}")


def test_sync_replaces_and_prunes_on_postgres_and_milvus_lite(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    _milvus_or_skip()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "parking.md").write_text("# 停车\n\n员工停车每天 10 CNY。\n", "utf-8")
    (docs / "canteen.md").write_text("# 食堂\n\n食堂午餐十二点开始。\n", "utf-8")
    with postgres.fresh_database() as url:
        index_uri = str(tmp_path / "milvus.db")
        env = {**os.environ, "RAGSIFT_DATA_DIR": str(tmp_path / "data"),
               "RAGSIFT_DATABASE_URL": url, "RAGSIFT_INDEX_URI": index_uri}

        def sync(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "ragsift.cli", "sync", str(docs),
                                   "--kb", "hr", *args], capture_output=True, text=True,
                                  env=env, timeout=300, check=False)

        assert sync().returncode == 0
        (docs / "parking.md").write_text("# 停车\n\n员工停车每天 15 CNY。\n", "utf-8")
        (docs / "canteen.md").unlink()
        done = sync("--prune")
        assert done.returncode == 0, done.stderr
        assert "1 replaced, 1 deleted" in done.stdout
        assert "0 replaced, 0 deleted" in sync("--prune").stdout
        container = build(Settings(data_dir=tmp_path / "data", database_url=url,
                                   index_uri=index_uri))
        try:
            kb = container.repository.get_kb_by_name("hr")
            assert kb is not None
            documents = container.repository.list_documents(kb.id)
            assert [(d.key, d.status) for d in documents] == [
                ("parking.md", DocumentStatus.READY)]
            hits = asyncio.run(container.retrieval.search(SearchRequest(
                query="停车 CNY", kb_id=kb.id))).hits
            assert hits and all("15 CNY" in h.text for h in hits)
        finally:
            container.close()
