"""`ragsift ingest` of documents with pictures killed at every phase: the next run finishes
them with each picture stored once, named by a chunk, its bytes present."""

from __future__ import annotations

import io
import signal
from pathlib import Path

import pytest
from PIL import Image

from faults.crash_helpers import run, settings_for
from ragsift.bootstrap import build
from ragsift.domain.assets import asset_object_key
from ragsift.domain.models import DocumentStatus

KILLED = -signal.SIGKILL
COLOURS = ((200, 30, 30), (30, 200, 30), (30, 30, 200))


def write_docs(folder: Path) -> Path:
    import docx

    folder.mkdir(parents=True, exist_ok=True)
    for i, colour in enumerate(COLOURS):
        picture = io.BytesIO()
        Image.new("RGB", (160, 120), colour).save(picture, "PNG")
        document = docx.Document()
        document.add_heading(f"Diagram {i}", 1)
        document.add_paragraph(f"diagram {i} shows rack marker{i}x and its cabling.")
        document.add_picture(picture)
        document.save(str(folder / f"diagram{i}.docx"))
    return folder


@pytest.mark.parametrize("point", ["parsed:2", "dense_written", "index_written", "committed"])
def test_a_rerun_after_a_kill_leaves_every_picture_once_named_and_stored(
    tmp_path: Path, point: str
) -> None:
    folder = write_docs(tmp_path / "docs")
    data = tmp_path / "data"
    killed = run(data, "ingest", str(folder), "--kb", "docs", crash_at=point)
    assert killed.returncode == KILLED, killed.stderr
    again = run(data, "ingest", str(folder), "--kb", "docs")
    assert again.returncode == 0, again.stderr

    container = build(settings_for(data))
    try:
        kb = container.repository.get_kb_by_name("docs")
        assert kb is not None
        documents = container.repository.list_documents(kb.id)
        assert [d.status for d in documents] == [DocumentStatus.READY] * len(COLOURS)
        for document in documents:
            [asset] = container.repository.document_assets(document.id)
            named = {a for c in container.repository.list_chunks(document.id)
                     for a in c.asset_ids}
            assert named == {asset.id}
            stored = data / "objects" / asset_object_key(kb.id, asset.sha256)
            assert stored.exists()
    finally:
        container.close()
