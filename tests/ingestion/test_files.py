"""Files as documents: keys from paths, a sync plan, and a file that vanishes mid-run."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.keys import normalize_key
from ragsift.domain.models import DocumentStatus
from ragsift.ingestion.files import find_files, ingest_files, plan_sync


def test_keys_are_normalised_and_hostile_ones_refused() -> None:
    assert normalize_key("./a//b\\c.md") == "a/b/c.md"
    assert normalize_key("/abs/x.md") == "abs/x.md"
    for bad in ("../x", "a/../b", "tab\there", "", "/", "x" * 1025):
        with pytest.raises(InvalidInput):
            normalize_key(bad)


def test_folder_files_get_their_relative_path_as_key_and_skips_are_listed(
    tmp_path: Path,
) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.md").write_text("x", "utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config.md").write_text("x", "utf-8")
    (tmp_path / "y.bin").write_bytes(b"\0")
    found = find_files([tmp_path])
    assert [(f.key) for f in found.files] == ["a/b/x.md"]
    assert sorted(why for _, why in found.skipped) == ["hidden", "unsupported type .bin"]
    with pytest.raises(InvalidInput, match="no such file"):
        find_files([tmp_path / "missing"])


def test_a_file_that_vanishes_mid_run_fails_alone(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("keep.md", "gone.md"):
        (folder / name).write_text(f"# {name}\n\ntext of {name}\n", "utf-8")
    found = find_files([folder])
    plan = plan_sync(found, {}, prune=False)
    (folder / "gone.md").unlink()  # between the plan and the ingestion
    container = build(Settings(data_dir=tmp_path / "data"))
    try:
        kb = container.ingestion.ensure_kb("kb")
        results, _ = ingest_files(container.ingestion, kb, plan.add)
        by_key = {r.source.key: r for r in results}
        assert by_key["gone.md"].outcome is None and "No such file" in (
            by_key["gone.md"].error or "")
        kept = by_key["keep.md"].outcome
        assert kept is not None and kept.document.status == DocumentStatus.READY
    finally:
        container.close()
