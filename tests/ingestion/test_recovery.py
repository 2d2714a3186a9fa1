"""Recovery takes over what a dead process left, cleans its index rows, and leaves live work."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import DocumentStatus
from ragsift.processes import Owner, this_process

TEXT = b"# Leave\n\nfifteen days of paid annual leave a year.\n"


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    built = build(Settings(data_dir=tmp_path / "data", chunk_tokens=32, chunk_overlap_tokens=0))
    yield built
    built.close()


def _owner_of(process: subprocess.Popen[bytes]) -> str:
    me = this_process()
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    start = int(stat.rsplit(")", 1)[1].split()[19])
    return Owner(me.host, me.boot_id, process.pid, start).token()


def test_a_document_of_a_live_process_is_left_alone_and_of_a_dead_one_taken_over(
    container: Container,
) -> None:
    kb = container.ingestion.ensure_kb("docs")
    live = container.ingestion.accept(kb, "live.md", TEXT).document.id
    dead = container.ingestion.accept(kb, "dead.md", TEXT + b"more\n").document.id
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        container.repository.set_owner(live, _owner_of(sleeper))
        gone = this_process()
        container.repository.set_owner(dead, Owner(gone.host, gone.boot_id, 2**22 + 1, 1).token())
        container.repository.set_status(dead, DocumentStatus.INDEXING)
        # what the dead process wrote to the index before it died
        stray = IndexRecord(chunk_id="stray", document_id=dead, kb_id=kb.id, text="leave")
        container.index.upsert([stray], np.ones((1, container.embedder.dimension), np.float32))

        assert container.ingestion.recover(kb.id) == [dead]

        assert container.repository.document_owner(live) == _owner_of(sleeper)
        document = container.repository.get_document(dead)
        assert document is not None and document.status == DocumentStatus.PENDING
        assert container.repository.document_owner(dead) == this_process().token()
        assert container.index.count() == 0  # the stray row is gone
        assert container.ingestion.process(dead).document.status == DocumentStatus.READY
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_document_being_deleted_by_a_dead_process_is_deleted(container: Container) -> None:
    kb = container.ingestion.ensure_kb("docs")
    document_id = container.ingestion.ingest_bytes(kb, "a.md", TEXT).document.id
    container.repository.set_status(document_id, DocumentStatus.DELETING)
    container.repository.set_owner(document_id, None)
    assert container.ingestion.recover(kb.id) == []
    assert container.repository.get_document(document_id) is None
    assert container.index.count() == 0
