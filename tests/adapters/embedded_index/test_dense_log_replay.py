"""Replaying the dense row log: column-wise validation keeps rejecting malformed rows."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsift.adapters.embedded_index.dense_log import DenseFiles

DIM = 4


def write(directory: Path, entries: list[dict[str, object]], rows: int) -> DenseFiles:
    files = DenseFiles(directory, DIM)
    files.vectors_path.write_bytes(np.ones((rows, DIM), np.float32).tobytes())
    files.log_path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in entries))
    return files


def test_rows_of_both_layouts_replay_in_order(tmp_path: Path) -> None:
    new = ["c1", "d", "kb", None, "t", None, None, '["r"]', 2, 0]
    old = ["c2", "d", "kb", "s", None, None, "public"]
    files = write(tmp_path, [{"add": [new, old]}, {"del": [0]}], rows=2)
    rows, deleted = files.replay()
    assert rows == [tuple(new), (*old, None, 0, 0)] and deleted == {0}


def test_an_entry_with_a_mistyped_row_is_dropped_with_what_follows(tmp_path: Path) -> None:
    good = ["c1", "d", "kb", None, None, None, None, None, 0, 0]
    bad = ["c2", "d", "kb", None, None, None, None, None, 0, "9"]  # a version as text
    files = write(tmp_path, [{"add": [good]}, {"add": [good[:], bad]}], rows=3)
    rows, _ = files.replay()
    assert rows == [tuple(good)]
    # the log is cut at the bad entry and the vectors to the rows it commits
    assert files.vectors_path.stat().st_size == DIM * 4
    assert files.log_path.read_bytes().count(b"\n") == 1


def test_an_append_the_full_disk_stops_gives_back_the_room_it_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors were written, the committing log line was not: both files go back to
    their size before, so the failed write leaves room for the FAILED status after it."""
    row = ["c1", "d", "kb", None, None, None, None, None, 0, 0]
    files = write(tmp_path, [{"add": [row]}], rows=1)
    before = (files.vectors_path.stat().st_size, files.log_path.stat().st_size)
    real_open = Path.open

    def full_log(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if self == files.log_path and "a" in mode:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full_log)
    with pytest.raises(OSError):
        files.append(np.ones((50, DIM), np.float32), [row] * 50, [])
    monkeypatch.undo()
    assert (files.vectors_path.stat().st_size, files.log_path.stat().st_size) == before
