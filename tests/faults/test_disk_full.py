"""A full disk during a document's index write fails that document and leaves no rows."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.crash_helpers import env_for, settings_for, write_corpus
from ragsift.bootstrap import build
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus

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
    ingest = ["python", "-m", "ragsift.cli", "ingest"]
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
    assert "No space left" in full.stderr or "disk is full" in full.stderr, full.stderr
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
