"""Rows read from the vector file without mapping it: the same values as the mapped matrix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapters.embedded_index.test_dense_store import (
    DIM,
    assert_same,
    brute_force,
    make_records,
    unit,
)
from ragsift.adapters.embedded_index.dense_rows import READ_MAX_ROWS, RowReader
from ragsift.adapters.embedded_index.dense_snapshot import _as_candidates
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter


def _spans(rows: np.ndarray) -> list[tuple[int, int]]:
    return _as_candidates(rows.astype(np.intp)).spans()


def test_runs_and_scattered_rows_read_as_the_matrix_holds_them(tmp_path: Path) -> None:
    matrix = np.random.default_rng(1).standard_normal((500, DIM)).astype(np.float32)
    path = tmp_path / "vectors.f32"
    path.write_bytes(matrix.tobytes())
    reader = RowReader(path, DIM)
    for rows in (np.arange(10, 40), np.array([0, 7, 8, 9, 250, 499]), np.array([3])):
        rows = rows.astype(np.intp)
        assert np.array_equal(reader.read(rows, _spans(rows)), matrix[rows])
    with path.open("ab") as grown:  # rows appended later are read through the same reader
        grown.write(matrix[:5].tobytes())
    assert np.array_equal(reader.read(np.array([500, 504], np.intp), [(0, 1), (1, 2)]),
                          matrix[[0, 4]])
    with pytest.raises(OSError, match="short read"):
        reader.read(np.array([505], np.intp), [(0, 1)])


def test_a_small_filter_is_scored_from_the_reader_and_an_old_snapshot_outlives_compaction(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(2)
    records = make_records(300)
    vectors = rng.standard_normal((300, DIM)).astype(np.float32)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, vectors)
    before = store._snapshot
    assert before.reader is not None
    query = rng.standard_normal(DIM).astype(np.float32)
    docs = frozenset({"d003", "d017", "d020"})
    wanted = SearchFilter(kb_id="kb2", document_ids=docs)
    allowed = [r.kb_id == "kb2" and r.document_id in docs for r in records]
    assert sum(allowed) <= READ_MAX_ROWS
    assert_same(store.search(query, wanted, 8), brute_force(records, vectors, query, allowed, 8))

    store.delete_chunks([r.chunk_id for r in records[:280]])  # compacts: generation 1
    assert not (tmp_path / "vectors-0.f32").exists()
    assert store._snapshot.reader is not before.reader
    # a search that started on the old snapshot still reads the unlinked file's rows
    assert_same(before.search(unit(query), wanted, 8),  # the store normalises, a snapshot not
                brute_force(records, vectors, query, allowed, 8))
    left = [i >= 280 and r.kb_id == "kb2" for i, r in enumerate(records)]
    assert_same(store.search(query, SearchFilter(kb_id="kb2"), 5),
                brute_force(records, vectors, query, left, 5))
