"""A full disk during a document's index write fails that document and leaves no rows; a
full data directory (the facts on it too) is told as such, exit 2, never an internal error."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.crash_helpers import CORPUS, env_for, settings_for, write_corpus
from ragsift.bootstrap import build
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.domain.requests import SearchRequest

SIZE_MB = 48


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of SIZE_MB mounted for the test (root and mount(8) needed, else skipped)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs",
                           str(mount)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_document_failing_on_a_full_disk_leaves_no_index_rows(
    small_disk: Path, tmp_path: Path
) -> None:
    data = small_disk / "data"
    # the facts live elsewhere: the FAILED status itself can be written
    facts = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    env = env_for(data, RAGSIFT_DATABASE_URL=facts)
    folder = write_corpus(tmp_path / "corpus")
    ingest = [sys.executable, "-m", "ragsift.cli", "ingest"]
    first = subprocess.run([*ingest, str(folder), "--kb", "docs"], env=env,
                           capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    big = tmp_path / "big.md"
    # ~900 chunks: their vectors alone (1.5 KiB each) outgrow the room left below
    big.write_text("\n\n".join(f"段落 {i}: term{i} " + "内容 " * 40 for i in range(900)),
                   "utf-8")
    # leave less room than the big document's vectors and BM25 segments need
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    with filler.open("wb") as handle:
        handle.truncate(0)
        handle.write(b"\0" * max(0, free - 512 * 1024 - big.stat().st_size))
    full = subprocess.run([*ingest, str(big), "--kb", "docs"], env=env, capture_output=True,
                          text=True, check=False)
    assert full.returncode == 2, full.stdout + full.stderr
    assert "FAILED" in full.stderr, full.stderr
    assert "no space left on the data directory" in full.stderr, full.stderr
    filler.unlink()

    settings = settings_for(data).model_copy(update={"database_url": facts})
    container = build(settings)
    try:
        kb = container.repository.get_kb_by_name("docs")
        assert kb is not None
        documents = container.repository.list_documents(kb.id)
        failed = [d for d in documents if d.status == DocumentStatus.FAILED]
        assert [d.filename for d in failed] == ["big.md"]
        container.ingestion.recover(kb.id)  # what the next command does first
        live = sum(1 for d in documents for c in container.repository.list_chunks(d.id)
                   if c.level == CHILD_LEVEL and c.valid_to_seq == 0)
        index = container.index
        assert (index.count(), index.sparse_count()) == (live, live)  # type: ignore[attr-defined]
    finally:
        container.close()


FREE_LEFT = 1_000_000  # bytes left free: less than the big document's index rows need


def test_a_full_data_directory_exits_2_with_the_no_space_message_and_fails_one_document(
    small_disk: Path, tmp_path: Path
) -> None:
    """Everything on the small disk, the facts included: the big document fails with the
    message, its FAILED status is still written, the small one of its batch is READY."""
    data = small_disk / "data"
    env = env_for(data)
    ingest = [sys.executable, "-m", "ragsift.cli", "ingest"]
    first = subprocess.run([*ingest, str(write_corpus(tmp_path / "corpus")), "--kb", "docs"],
                           env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "a_small.md").write_text("# Small\n\nsmallmarker fits in what is left.\n", "utf-8")
    # ~400 chunks: their vectors (two dense channels) and rows outgrow FREE_LEFT
    (batch / "big.md").write_text(
        "\n\n".join(f"段落 {i}: term{i} " + "内容 " * 40 for i in range(400)), "utf-8")
    filler = small_disk / "filler"
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(0, shutil.disk_usage(small_disk).free - FREE_LEFT))
    full = subprocess.run([*ingest, str(batch), "--kb", "docs"], env=env,
                          capture_output=True, text=True, check=False)
    output = full.stdout + full.stderr
    assert full.returncode == 2, output
    assert f"no space left on the data directory {data} (needed ~" in output, output
    assert "sqlalche.me" not in output and "internal error" not in output, output
    assert "Traceback" not in output, output
    filler.unlink()

    container = build(settings_for(data))
    try:
        kb = container.repository.get_kb_by_name("docs")
        assert kb is not None
        container.ingestion.recover(kb.id)  # what the next command does first
        documents = {d.filename: d for d in container.repository.list_documents(kb.id)}
        big = documents["big.md"]
        # the failed write gave its room back, so its FAILED status could be written
        assert big.status == DocumentStatus.FAILED, big
        assert (big.error or "").startswith(f"no space left on the data directory {data}"), big
        others = {name: d.status for name, d in documents.items() if name != "big.md"}
        assert set(others.values()) == {DocumentStatus.READY}, others
        assert len(others) == len(CORPUS) + 1
        live = sum(1 for d in documents.values() for c in container.repository.list_chunks(d.id)
                   if c.level == CHILD_LEVEL and c.valid_to_seq == 0)
        index = container.index
        assert (index.count(), index.sparse_count()) == (live, live)  # type: ignore[attr-defined]
        request = SearchRequest(query="smallmarker", kb_id=kb.id, mode="sparse", top_k=3)
        hits = asyncio.run(container.retrieval.search(request)).hits
        assert hits and hits[0].filename == "a_small.md", hits
    finally:
        container.close()
