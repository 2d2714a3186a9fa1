"""A whitelist of few documents is found through each document's span of rows
(dense_document_spans.py): the same rows as a scan of every row's codes, across writes in
several batches, replaced and deleted documents, and snapshots made by later writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index import dense_snapshot
from ragsift.adapters.embedded_index.dense_document_spans import DocumentSpans
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

DIM = 8


def test_spans_are_each_documents_first_and_last_row() -> None:
    spans = DocumentSpans.of(np.array([1, 1, 2, 3, 2, 0], dtype=np.int32))
    assert spans.first.tolist() == [5, 0, 2, 3] and spans.last.tolist() == [5, 1, 4, 3]
    assert spans.rows([2], most=10) is not None
    assert spans.rows([2], most=10).tolist() == [2, 3, 4]  # type: ignore[union-attr]
    assert spans.rows([1, 3], most=10).tolist() == [0, 1, 3]  # type: ignore[union-attr]
    assert spans.rows([9], most=10).tolist() == []  # type: ignore[union-attr]
    assert spans.rows([1, 2], most=4) is None  # 5 rows spanned, more than asked


def test_extending_spans_equals_making_them_from_every_row() -> None:
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 40, 500).astype(np.int32)
    spans = DocumentSpans.of(codes[:0])
    for lo, hi in ((0, 120), (120, 121), (121, 400), (400, 500)):
        spans = spans.extended(codes[lo:hi], lo)
    whole = DocumentSpans.of(codes)
    assert spans.first.tolist() == whole.first.tolist()
    assert spans.last.tolist() == whole.last.tolist()


def _records(docs: range, part: int, kb: str = "kb") -> list[IndexRecord]:
    return [IndexRecord(chunk_id=f"{kb}:d{d}-{part}-{j}", document_id=f"d{d}", kb_id=kb, text="",
                        tenant_id=("t1", "t2")[j % 2]) for d in docs for j in range(4)]


@pytest.fixture
def store(tmp_path: Path) -> DenseMatrixStore:
    rng = np.random.default_rng(9)
    built = DenseMatrixStore(tmp_path, DIM)
    # each document written in two batches, another kb's rows between its two parts
    for group in range(30):
        docs = range(10 * group, 10 * group + 10)
        for batch in (_records(docs, 0), _records(docs, 0, "other"), _records(docs, 1)):
            built.upsert(batch, rng.standard_normal((len(batch), DIM)).astype(np.float32))
    return built


def _searched(store: DenseMatrixStore, search_filter: SearchFilter,
              spans: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[int]]:
    """The chunks found, and the rows each lookup by spans gave (-1: too many, scanned)."""
    monkeypatch.setattr(dense_snapshot, "_SPAN_DOCUMENT_ROWS", 64 if spans else 10**9)
    spanned: list[int] = []
    by_spans = DocumentSpans.rows

    def counted(self: DocumentSpans, codes: list[int], most: int) -> object:
        found = by_spans(self, codes, most)
        spanned.append(-1 if found is None else found.size)
        return found

    monkeypatch.setattr(DocumentSpans, "rows", counted)
    store._snapshot.cache.clear()
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    found = [hit.chunk_id for hit in store.search(query, search_filter, 1000)]
    assert bool(spanned) == spans
    return found, spanned


@pytest.mark.parametrize("documents", [["d3"], ["d0", "d150", "d299"], ["d7", "missing"]])
def test_a_few_documents_rows_by_their_spans_equal_the_scans(
    store: DenseMatrixStore, monkeypatch: pytest.MonkeyPatch, documents: list[str],
) -> None:
    rng = np.random.default_rng(2)
    search_filter = SearchFilter(kb_id="kb", document_ids=frozenset(documents),
                                 tenant_ids=frozenset({"t2"}))
    scanned, _ = _searched(store, search_filter, False, monkeypatch)
    found, spanned = _searched(store, search_filter, True, monkeypatch)
    assert found == scanned
    assert spanned[0] >= 0  # answered by the spans, the other kb's rows in them dropped
    assert len(scanned) == 4 * len([d for d in documents if d != "missing"])
    # a replaced document (new rows at the end, old ones dead), a deleted one
    store.upsert(_records(range(3, 4), 2), rng.standard_normal((4, DIM)).astype(np.float32))
    store.delete_chunks([f"kb:d3-0-{j}" for j in range(4)])
    store.delete_document("d150")
    assert store._snapshot.spans  # carried to the new snapshot by each write
    scanned, _ = _searched(store, search_filter, False, monkeypatch)
    assert _searched(store, search_filter, True, monkeypatch)[0] == scanned
    assert not any(chunk.startswith(("kb:d3-0-", "kb:d150-")) for chunk in scanned)
