"""Images of a replaced document stay while a retained KB version's chunks name them, and go
with the version that held them last."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from ragsift.domain.assets import asset_object_key
from versions.version_stack import Stack, build_stack


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    built = build_stack(tmp_path / "stack", chunk_tokens=64, parent_max_tokens=128)
    yield built  # type: ignore[misc]
    built.close()


def handbook(with_picture: bool) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Network", 1)
    document.add_paragraph("the firewall sits between the office lan and the vpn gateway")
    if with_picture:
        picture = io.BytesIO()
        Image.new("RGB", (200, 150), (10, 120, 40)).save(picture, "PNG")
        document.add_picture(picture)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_retained_version_keeps_the_images_its_chunks_name_until_collected(
    stack: Stack,
) -> None:
    kb = stack.kb("kb", retention=2)
    outcome = stack.ingestion.ingest_bytes(kb, "net.docx", handbook(True))
    document_id = outcome.document.id
    [asset] = stack.repository.document_assets(document_id)
    stored = stack.settings.data_dir / "objects" / asset_object_key(kb.id, asset.sha256)
    old_version = stack.repository.get_version_state(kb.id).active_seq  # type: ignore[union-attr]
    accepted = stack.ingestion.accept(kb, "net.docx", handbook(False))
    stack.ingestion.replace(accepted.document.id, "net.docx", handbook(False))

    live = [c for c in stack.repository.list_chunks(document_id) if c.valid_to_seq == 0]
    assert all(asset.id not in c.asset_ids for c in live)  # the new content has no picture
    assert stack.repository.get_asset(asset.id) == asset and stored.exists()
    old_hits = stack.search(kb, "firewall vpn gateway", kb_version=old_version).hits
    assert any(ref.id == asset.id for hit in old_hits for ref in hit.assets)

    stack.versions.configure(kb, retention=1)  # the old version goes, and its picture
    assert stack.repository.get_asset(asset.id) is None
    assert not stored.exists()
