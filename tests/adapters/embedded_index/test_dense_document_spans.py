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


def test_a_document_replaced_whole_spans_only_its_new_rows() -> None:
    codes = np.array([1, 1, 2, 2, 3], dtype=np.int32)
    spans = DocumentSpans.of(codes)
    # document 1's two rows die and come back at rows 5-6; document 2 loses one row of two
    spans = spans.written(codes, np.ones(5, dtype=np.bool_), np.array([1, 1], dtype=np.int32),
                          [0, 1, 2])
    assert spans.first.tolist()[1:] == [5, 2, 4] and spans.last.tolist()[1:] == [6, 3, 4]
    assert spans.live.tolist()[1:] == [2, 1, 1]
    # deleted whole, nothing new: no span at all
    spans = spans.written(np.array([1, 1, 2, 2, 3, 1, 1], dtype=np.int32),
                          np.array([0, 0, 0, 1, 1, 1, 1], dtype=np.bool_),
                          np.empty(0, dtype=np.int32), [4])
    assert spans.first[3] == -1 and spans.last[3] == -1 and spans.live[3] == 0
    assert spans.rows([3], most=10).tolist() == []  # type: ignore[union-attr]


def test_spans_kept_across_random_writes_hold_every_live_row_and_count_them() -> None:
    rng = np.random.default_rng(8)
    codes = rng.integers(1, 30, 200).astype(np.int32)
    alive = np.ones(codes.size, dtype=np.bool_)
    spans = DocumentSpans.of(codes)
    for _ in range(40):
        added = rng.integers(1, 30, int(rng.integers(0, 20))).astype(np.int32)
        dead = rng.choice(codes.size + added.size, int(rng.integers(0, 15)), replace=True)
        spans = spans.written(codes, alive, added, dead.tolist())  # repeats, dead rows too
        codes = np.concatenate([codes, added])
        alive = np.concatenate([alive, np.ones(added.size, dtype=np.bool_)])
        alive[dead] = False
    tight = DocumentSpans.of(codes, alive)
    assert spans.live.tolist() == tight.live[: spans.live.size].tolist()
    for code in range(1, spans.first.size):
        live_rows = np.flatnonzero(alive & (codes == code))
        if live_rows.size == 0:
            assert spans.first[code] == -1
            continue
        assert spans.first[code] <= live_rows[0] and live_rows[-1] <= spans.last[code]
        assert tight.first[code] == live_rows[0] and tight.last[code] == live_rows[-1]


def test_after_every_document_is_replaced_a_whitelist_is_still_found_by_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(4)
    store = DenseMatrixStore(tmp_path, DIM)

    def write(docs: range) -> None:  # each document in two batches, another kb's rows between
        others = [IndexRecord(chunk_id=f"o{d}", document_id=f"o{d}", kb_id="other", text="")
                  for d in docs]
        for batch in (_records(docs, 0), others, _records(docs, 1)):
            store.upsert(batch, rng.standard_normal((len(batch), DIM)).astype(np.float32))

    for group in range(30):
        write(range(10 * group, 10 * group + 10))
    search_filter = SearchFilter(kb_id="kb", document_ids=frozenset({"d3", "d150", "d299"}))
    _searched(store, search_filter, True, monkeypatch)  # spans made, then carried
    for group in range(30):  # each document re-ingested whole, as a sync of changed files
        docs = range(10 * group, 10 * group + 10)
        # the same chunks, a document's together: its old rows die
        batch = [r for d in docs for part in (0, 1) for r in _records(range(d, d + 1), part)]
        store.upsert(batch, rng.standard_normal((len(batch), DIM)).astype(np.float32))
    assert store._snapshot.size > store._snapshot.live  # no compaction made them afresh
    scanned, _ = _searched(store, search_filter, False, monkeypatch)
    found, spanned = _searched(store, search_filter, True, monkeypatch)
    assert found == scanned and len(found) == 24
    assert spanned == [24]  # the new rows alone: the old, dead ones are outside the spans
    store._snapshot.spans.clear()  # made afresh from the live rows: the same
    assert _searched(store, search_filter, True, monkeypatch) == (found, [24])
