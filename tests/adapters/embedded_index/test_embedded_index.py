"""EmbeddedIndex: both channels behind the SearchIndex port, one directory, one filter."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.bm25_store import IndexInUse
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.ports import SearchIndex

DIM = 8


def corpus() -> tuple[list[IndexRecord], np.ndarray]:
    """Every chunk contains the word "alpha", so BM25 can see every chunk a filter allows."""
    records = []
    for i in range(48):
        records.append(
            IndexRecord(
                chunk_id=f"c{i:02d}",
                document_id=f"d{i // 4}",
                kb_id=("kb1", "kb2")[i // 24],
                text=f"alpha 文档 {i} {'北京' if i % 2 else '上海'}",
                source=("wiki", "faq", None, "")[i % 4],
                tenant_id=("t1", None)[i % 2],
                dataset_id=("ds", "ds2", "ds3")[i % 3],
                visibility=("public", "secret")[(i // 2) % 2],
            )
        )
    vectors = np.random.default_rng(7).standard_normal((48, DIM)).astype(np.float32)
    return records, vectors


def test_embedded_index_implements_the_search_index_port(tmp_path: Path) -> None:
    index: SearchIndex = EmbeddedIndex(tmp_path, DIM)
    assert index.count() == 0
    index.close()


def test_both_channels_apply_the_same_filter(tmp_path: Path) -> None:
    records, vectors = corpus()
    index = EmbeddedIndex(tmp_path, DIM)
    index.upsert(records, vectors)
    filters = [
        SearchFilter(kb_id="kb1"),
        SearchFilter(kb_id="kb2", sources=frozenset({"", "faq"})),
        SearchFilter(kb_id="kb1", tenant_ids=frozenset({"t1"}), visibilities=frozenset({"secret"})),
        SearchFilter(kb_id="kb2", document_ids=frozenset({"d6", "d9", "d0"})),
        SearchFilter(kb_id="kb1", dataset_ids=frozenset({"ds2"}), sources=frozenset({"wiki"})),
        SearchFilter(kb_id="kb1", document_ids=frozenset()),
    ]
    for search_filter in filters:
        dense = {h.chunk_id for h in index.search_dense(vectors[0], search_filter, 100)}
        sparse = {h.chunk_id for h in index.search_sparse("alpha", search_filter, 100)}
        expected = {
            r.chunk_id
            for r in records
            if r.kb_id == search_filter.kb_id
            and (search_filter.document_ids is None or r.document_id in search_filter.document_ids)
            and all(
                getattr(r, name) in values for name, values in search_filter.scope_fields().items()
            )
        }
        assert dense == sparse == expected
    index.close()


def test_sparse_returns_raw_bm25_and_dense_returns_cosine(tmp_path: Path) -> None:
    records, vectors = corpus()
    index = EmbeddedIndex(tmp_path, DIM)
    index.upsert(records, vectors)
    [dense_top] = index.search_dense(vectors[5], SearchFilter(kb_id="kb1"), 1)
    assert dense_top.chunk_id == "c05"
    assert dense_top.score == pytest.approx(1.0)
    # "北京" gives the query terms 北京, 北 and 京 (analyzer v2: word, characters, bigram);
    # each is in 12 of kb1's 24 equally long chunks, so each idf is
    # ln(1 + (24 - 12 + 0.5) / (12 + 0.5)) = ln 2, counted over kb1 alone. In a chunk, 北京
    # occurs twice (word and bigram), 北 and 京 once; at average length the BM25 term
    # weight is tf (k1 + 1) / (tf + k1) with k1 = 1.2: 2 * 2.2 / 3.2 = 1.375, and 1.
    sparse = index.search_sparse("北京", SearchFilter(kb_id="kb1"), 5)
    assert len(sparse) == 5
    assert all(h.score == pytest.approx(3.375 * math.log(2), rel=1e-5) for h in sparse)
    index.close()


def test_upsert_and_deletes_reach_both_channels(tmp_path: Path) -> None:
    records, vectors = corpus()
    index = EmbeddedIndex(tmp_path, DIM)
    index.upsert(records, vectors)
    index.delete_chunks(["c00", "c01"])
    index.delete_document("d1")
    kb1 = SearchFilter(kb_id="kb1")
    gone = {"c00", "c01", "c04", "c05", "c06", "c07"}
    assert index.count() == 42
    assert not gone & {h.chunk_id for h in index.search_dense(vectors[0], kb1, 100)}
    assert not gone & {h.chunk_id for h in index.search_sparse("alpha", kb1, 100)}
    replacement = IndexRecord("c02", "d0", "kb2", "omega", source="wiki")
    index.upsert([replacement], vectors[:1])
    assert index.search_sparse("alpha", kb1, 100)[-1].chunk_id != "c02"
    assert [h.chunk_id for h in index.search_sparse("omega", SearchFilter(kb_id="kb2"), 5)] == [
        "c02"
    ]
    assert index.count() == 42
    index.close()


def test_a_rejected_batch_changes_neither_channel(tmp_path: Path) -> None:
    records, vectors = corpus()
    index = EmbeddedIndex(tmp_path, DIM)
    with pytest.raises(ValueError, match="dimension"):
        index.upsert(records, vectors[:, :4])
    assert index.count() == 0
    assert index.search_sparse("alpha", SearchFilter(kb_id="kb1"), 10) == []
    index.close()


def test_index_survives_close_and_reopen(tmp_path: Path) -> None:
    records, vectors = corpus()
    index = EmbeddedIndex(tmp_path, DIM)
    for start in range(0, 48, 10):
        index.upsert(records[start : start + 10], vectors[start : start + 10])
    index.delete_document("d3")
    flt = SearchFilter(kb_id="kb1", visibilities=frozenset({"public"}))
    dense_before = index.search_dense(vectors[3], flt, 10)
    sparse_before = index.search_sparse("北京 alpha", flt, 10)
    index.close()
    reopened = EmbeddedIndex(tmp_path, DIM)
    assert reopened.count() == 44
    assert reopened.search_dense(vectors[3], flt, 10) == dense_before
    assert reopened.search_sparse("北京 alpha", flt, 10) == sparse_before
    assert (tmp_path / "dense").is_dir() and (tmp_path / "sparse").is_dir()
    reopened.close()


def test_a_second_open_of_the_same_directory_is_refused_until_close(tmp_path: Path) -> None:
    first = EmbeddedIndex(tmp_path, DIM)
    with pytest.raises(IndexInUse, match="another ragsift process"):
        EmbeddedIndex(tmp_path, DIM)
    first.close()
    EmbeddedIndex(tmp_path, DIM).close()


def test_reopening_with_another_dimension_is_refused(tmp_path: Path) -> None:
    EmbeddedIndex(tmp_path, DIM).close()
    with pytest.raises(ValueError, match="dimension"):
        EmbeddedIndex(tmp_path, DIM * 2)
    EmbeddedIndex(tmp_path, DIM).close()
