"""Upserts, deletes, rejected batches and restart persistence, on both backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_backends import Backend
from index_corpus import DIM, HOSTILE, bilingual, direction, grid

from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from ragsift.ports import SearchIndex

GRID1 = SearchFilter(kb_id="grid1")
DOCS = SearchFilter(kb_id="docs")
ONES = np.ones(DIM, dtype=np.float32)


def ids(hits: list[ChannelHit]) -> set[str]:
    return {h.chunk_id for h in hits}


def test_deletes_by_chunk_and_by_document_reach_both_channels(fresh_index: SearchIndex) -> None:
    records, vectors = grid()
    fresh_index.upsert(records, vectors)
    assert fresh_index.count() == 48
    fresh_index.delete_chunks(["g00", "g01", "missing"])
    fresh_index.delete_document("gd1")  # g04..g07
    fresh_index.delete_document("missing")
    fresh_index.delete_chunks([])
    gone = {"g00", "g01", "g04", "g05", "g06", "g07"}
    expected = {r.chunk_id for r in records if r.kb_id == "grid1"} - gone
    assert fresh_index.count() == 42
    assert ids(fresh_index.search_dense(ONES, GRID1, 100)) == expected
    assert ids(fresh_index.search_sparse("alpha", GRID1, 100)) == expected


def test_delete_document_with_a_hostile_id_removes_only_that_document(
    fresh_index: SearchIndex,
) -> None:
    records = [IndexRecord(f"c{i}", value, "kb", "alpha") for i, value in enumerate(HOSTILE)]
    vectors = np.random.default_rng(3).standard_normal((len(records), DIM)).astype(np.float32)
    fresh_index.upsert(records, vectors)
    fresh_index.delete_document('" or kb_id != "')
    fresh_index.delete_chunks(['c1" or chunk_id != "'])
    left = {f"c{i}" for i in range(len(HOSTILE))} - {"c0"}
    assert fresh_index.count() == len(HOSTILE) - 1
    assert ids(fresh_index.search_sparse("alpha", SearchFilter(kb_id="kb"), 100)) == left


def test_upsert_replaces_the_text_and_vector_of_an_id(fresh_index: SearchIndex) -> None:
    records, vectors = bilingual()
    fresh_index.upsert(records, vectors)
    fox = next(i for i, r in enumerate(records) if r.chunk_id == "en-fox")
    replacement = IndexRecord("en-fox", "doc-en", "docs", "Zebra crossing rules", source="wiki")
    new_vector = direction({1: 1.0, 3: 1.0})
    fresh_index.upsert([replacement], new_vector.reshape(1, -1))
    assert fresh_index.count() == len(records)
    assert fresh_index.search_sparse("quick fox", DOCS, 5) == []
    [hit] = fresh_index.search_sparse("zebra", DOCS, 5)
    assert (hit.chunk_id, hit.document_id) == ("en-fox", "doc-en")
    top = fresh_index.search_dense(new_vector, DOCS, 1)
    assert [(h.chunk_id, round(h.score, 4)) for h in top] == [("en-fox", 1.0)]
    old = fresh_index.search_dense(vectors[fox], DOCS, 10)
    assert next(h.score for h in old if h.chunk_id == "en-fox") < 0.99


def test_the_last_occurrence_of_an_id_in_one_batch_wins(fresh_index: SearchIndex) -> None:
    batch = [
        IndexRecord("c", "d", "kb", "first words"),
        IndexRecord("k", "d", "kb", "other words"),
        IndexRecord("c", "d", "kb", "second words"),
    ]
    vectors = np.stack([direction({0: 1.0}), direction({1: 1.0}), direction({2: 1.0})])
    fresh_index.upsert(batch, vectors)
    kb = SearchFilter(kb_id="kb")
    assert fresh_index.count() == 2
    assert fresh_index.search_sparse("first", kb, 5) == []
    assert ids(fresh_index.search_sparse("second", kb, 5)) == {"c"}
    assert fresh_index.search_dense(direction({2: 1.0}), kb, 1)[0].chunk_id == "c"


def test_a_chunk_upserted_into_another_kb_leaves_its_old_kb(fresh_index: SearchIndex) -> None:
    vectors = np.stack([direction({0: 1.0}), direction({1: 1.0})])
    fresh_index.upsert(
        [IndexRecord("c", "d", "a", "alpha"), IndexRecord("k", "d", "a", "alpha")], vectors
    )
    fresh_index.upsert([IndexRecord("c", "d", "b", "alpha beta")], vectors[:1])
    a, b = SearchFilter(kb_id="a"), SearchFilter(kb_id="b")
    assert ids(fresh_index.search_sparse("alpha", a, 10)) == {"k"}
    assert ids(fresh_index.search_dense(ONES, a, 10)) == {"k"}
    assert ids(fresh_index.search_sparse("alpha", b, 10)) == {"c"}
    assert ids(fresh_index.search_dense(ONES, b, 10)) == {"c"}
    assert fresh_index.count() == 2


def test_a_rejected_batch_changes_neither_channel(fresh_index: SearchIndex) -> None:
    records, vectors = grid()
    with pytest.raises(ValueError, match="dimension"):
        fresh_index.upsert(records, vectors[:, :4])
    with pytest.raises(ValueError, match="expected 48 vectors"):
        fresh_index.upsert(records, vectors[:47])
    bad = vectors.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="finite"):
        fresh_index.upsert(records, bad)
    assert fresh_index.count() == 0
    assert fresh_index.search_sparse("alpha", GRID1, 10) == []
    assert fresh_index.search_dense(ONES, GRID1, 10) == []


def test_the_index_survives_close_and_reopen(backend: Backend, tmp_path: Path) -> None:
    index = backend.open(tmp_path)
    records, vectors = grid()
    for start in range(0, 48, 10):  # several writes, so milvus-lite has several segments
        index.upsert(records[start : start + 10], vectors[start : start + 10])
    index.delete_document("gd3")
    index.upsert(
        [IndexRecord("g01", "gd0", "grid1", "alpha omega", visibility="public")], vectors[1:2]
    )
    flt = SearchFilter(kb_id="grid1", visibilities=frozenset({"public"}))
    dense_before = index.search_dense(vectors[3], flt, 10)
    sparse_before = index.search_sparse("北京 alpha omega", flt, 10)
    index.close()
    reopened = backend.open(tmp_path)
    try:
        assert reopened.count() == 44
        assert [h.chunk_id for h in reopened.search_dense(vectors[3], flt, 10)] == [
            h.chunk_id for h in dense_before
        ]
        assert [h.score for h in reopened.search_dense(vectors[3], flt, 10)] == pytest.approx(
            [h.score for h in dense_before], abs=1e-5
        )
        sparse_after = reopened.search_sparse("北京 alpha omega", flt, 10)
        assert ids(sparse_after) == ids(sparse_before)
        assert sparse_after[0].chunk_id == sparse_before[0].chunk_id == "g01"
        reopened.upsert([IndexRecord("g99", "gd9", "grid1", "fresh words")], vectors[:1])
        assert ids(reopened.search_sparse("fresh", GRID1, 5)) == {"g99"}
    finally:
        reopened.close()


def test_reopening_with_another_dimension_is_refused(backend: Backend, tmp_path: Path) -> None:
    backend.open(tmp_path).close()
    with pytest.raises(ValueError, match="dimension"):
        backend.open(tmp_path, dimension=DIM * 2)
    backend.open(tmp_path).close()


def test_an_empty_index_answers_every_search_with_nothing(fresh_index: SearchIndex) -> None:
    assert fresh_index.count() == 0
    assert fresh_index.search_dense(ONES, GRID1, 10) == []
    assert fresh_index.search_sparse("alpha", GRID1, 10) == []
    fresh_index.delete_document("d")
    fresh_index.delete_chunks(["c"])
