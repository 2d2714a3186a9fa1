"""Scattered rows of an exact scan scored in place (faiss's by-index inner products)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index import dense_by_index
from ragsift.adapters.embedded_index.dense_by_index import BY_INDEX_MIN_ROWS, scores_by_index
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

DIM = 16


def test_scores_read_in_place_equal_the_gathered_product() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((500, DIM)).astype(np.float32)
    rows = np.flatnonzero(rng.random(500) < 0.3)
    query = rng.standard_normal(DIM).astype(np.float32)

    found = scores_by_index(matrix, rows, query)

    assert found is not None
    np.testing.assert_allclose(found, matrix[rows] @ query, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [[3, 2], [0, 500], [-1, 4]],
                         ids=["unsorted", "past-the-end", "negative"])
def test_rows_faiss_could_not_read_safely_are_left_to_the_gather(rows: list[int]) -> None:
    matrix = np.zeros((500, DIM), dtype=np.float32)
    assert scores_by_index(matrix, np.asarray(rows, dtype=np.intp),
                           np.ones(DIM, np.float32)) is None


def test_a_scattered_filter_scanned_exactly_in_place_ranks_as_brute_force(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    total = 3 * BY_INDEX_MIN_ROWS + 300  # kb1: every third document of 10 rows, > the minimum
    records = [IndexRecord(f"c{i:06d}", f"d{i // 10}", f"kb{(i // 10) % 3}", "")
               for i in range(total)]
    vectors = rng.standard_normal((total, DIM)).astype(np.float32)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, vectors)
    calls: list[int] = []
    real = dense_by_index.scores_by_index

    def spy(matrix: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray | None:
        calls.append(rows.size)
        return real(matrix, rows, query)

    monkeypatch.setattr("ragsift.adapters.embedded_index.dense_snapshot.scores_by_index", spy)
    query = rng.standard_normal(DIM).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    allowed = [i for i, r in enumerate(records) if r.kb_id == "kb1"]
    expected = sorted(allowed, key=lambda i: (-scores[i], records[i].chunk_id))[:20]

    hits = store.search(query, SearchFilter(kb_id="kb1"), 20)

    assert calls == [len(allowed)]
    assert [h.chunk_id for h in hits] == [records[i].chunk_id for i in expected]
    assert [h.score for h in hits] == pytest.approx([float(scores[i]) for i in expected],
                                                    abs=1e-5)
