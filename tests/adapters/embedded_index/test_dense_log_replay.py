"""Replaying the dense row log: column-wise validation keeps rejecting malformed rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

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
