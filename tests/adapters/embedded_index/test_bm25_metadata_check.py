"""The metadata check's note in a kb's BM25 directory (bm25_metadata_check.py): it holds
for the index as committed when it was written, and for nothing after."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragsift.adapters.embedded_index import bm25_metadata_check as check
from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_schema import schema
from ragsift.domain.index_records import IndexRecord

STAMP = '[3, "2026-12-07 14:00:00.000001"]'


def _index(tmp_path: Path) -> KbIndex:
    index = KbIndex(tmp_path / "kb", schema())
    _add(index, "c1")
    return index


def _add(index: KbIndex, chunk_id: str) -> None:
    record = IndexRecord(chunk_id=chunk_id, document_id=f"{1:032x}", kb_id="kb",
                         text="travel meal allowance")
    index.replace([record], [index.document(record)])


def test_an_index_never_checked_has_no_note(tmp_path: Path) -> None:
    assert check.checked(_index(tmp_path).directory) is None


def test_the_note_holds_until_the_next_commit(tmp_path: Path) -> None:
    index = _index(tmp_path)
    check.record(index.directory, STAMP)
    assert check.checked(index.directory) == STAMP
    _add(index, "c2")
    assert check.checked(index.directory) is None


def test_an_unreadable_note_is_no_note(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for text in ("{", "[]", '{"facts": 7, "opstamp": 0}'):
        (index.directory / check.CHECK_FILE).write_text(text, "utf-8")
        assert check.checked(index.directory) is None


def test_a_killed_writers_temporary_note_is_swept(tmp_path: Path) -> None:
    index = _index(tmp_path)
    left = index.directory / ".metadata-check-abc"
    left.write_text("half", "utf-8")
    check.record(index.directory, STAMP)
    assert not left.exists() and check.checked(index.directory) == STAMP


def test_a_failed_write_is_logged_and_only_costs_the_next_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    index = _index(tmp_path)

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(check, "write_atomically", full)
    with caplog.at_level(logging.WARNING):
        check.record(index.directory, STAMP)
    assert "no space left" in caplog.text
    assert check.checked(index.directory) is None
