"""`ragsift kb settings NAME --set/--unset` in process (typer's runner): the effective values
and which are the KB's own, the reindex command after a chunking change, exit 2 naming a
bad key (InvalidInput, mapped to 2 by `main`) with nothing stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ragsift.adapters.sql import SqlRepository
from ragsift.cli import app
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase


def _run(data_dir: Path, *args: str) -> Any:
    runner = CliRunner()
    return runner.invoke(app, [*args, "--data-dir", str(data_dir)], catch_exceptions=True)


def _kb_with_a_document(data: Path) -> None:
    """KB "k" holding one READY document, as the database has it (the command reads only
    the database; tests/api/test_api_kb_settings.py ingests for real)."""
    data.mkdir()
    repository = SqlRepository(Settings(data_dir=data).resolved_database_url)
    try:
        repository.create_kb(KnowledgeBase(id="kb1", name="k", embedding_model="m",
                                           embedding_dim=4))
        repository.add_document(Document(id="d1", kb_id="kb1", filename="a.md",
                                         media_type="text/markdown", sha256=None, size=1,
                                         status=DocumentStatus.READY))
    finally:
        repository.close()


def test_kb_settings_shows_sets_unsets_and_prints_the_reindex_command(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _kb_with_a_document(data)

    done = _run(data, "kb", "settings", "k", "--set", "chunk_tokens=128",
                "--set", "chunk_overlap_tokens=16", "--set", "rerank=false")
    assert done.exit_code == 0, done.output
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert "chunk_tokens 128 (overridden, changed since build)" in lines
    assert "rerank false (overridden)" in lines and "mode hybrid" in lines
    assert "ragsift reindex --kb k" in done.stdout

    for bad_args, named in ((["--set", "chunk_tokens=9999"], "chunk_tokens"),
                            (["--unset", "bogus"], "bogus"), (["--set", "bogus=1"], "bogus")):
        bad = _run(data, "kb", "settings", "k", *bad_args)
        assert isinstance(bad.exception, InvalidInput) and named in str(bad.exception)

    done = _run(data, "kb", "settings", "k", "--unset", "rerank", "--json")
    assert done.exit_code == 0, done.output
    shown = json.loads(done.stdout)
    assert shown["overrides"] == {"chunk_tokens": 128, "chunk_overlap_tokens": 16}
    assert shown["reindex"]["command"] == "ragsift reindex --kb k"

