"""Exact cosine search with pre-ranking filters, persistence and compaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

DIM = 16


def unit(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    scaled: NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(
        np.float32
    )
    return scaled


def make_records(
    n: int, layout: str = "contiguous", kbs: int = 3, doc_size: int = 10
) -> list[IndexRecord]:
    """`contiguous`: a document's chunks are adjacent rows; `interleaved`: kb = row % kbs."""
    records = []
    for i in range(n):
        doc = i // doc_size if layout == "contiguous" else i % (kbs * 7)
        records.append(
            IndexRecord(
                chunk_id=f"c{i:05d}",
                document_id=f"d{doc:03d}",
                kb_id=f"kb{doc % kbs}",
                text="",
                source=("wiki", "faq", None)[i % 3],
                tenant_id=("t1", "t2")[i % 2],
                visibility=("public", "", None, "secret")[i % 4],
            )
        )
    return records


def brute_force(
    records: list[IndexRecord],
    vectors: NDArray[np.float32],
    query: NDArray[np.float32],
    allowed: list[bool],
    k: int,
) -> list[tuple[str, float]]:
    scores = unit(vectors) @ unit(query)
    ranked = sorted(
        (i for i in range(len(records)) if allowed[i]),
        key=lambda i: (-scores[i], records[i].chunk_id),
    )
    return [(records[i].chunk_id, float(scores[i])) for i in ranked[:k]]


def assert_same(hits: list[ChannelHit], expected: list[tuple[str, float]]) -> None:
    assert [h.chunk_id for h in hits] == [cid for cid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-5)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.mark.parametrize(
    ("layout", "kbs"),
    [("contiguous", 3), ("interleaved", 4), ("interleaved", 2)],
    ids=["runs-scored-in-place", "scattered-rows-gathered", "large-share-full-product"],
)
def test_top_k_equals_brute_force_with_and_without_masks(
    tmp_path: Path, rng: np.random.Generator, layout: str, kbs: int
) -> None:
    records = make_records(400, layout, kbs, doc_size=40)
    vectors = rng.standard_normal((400, DIM)).astype(np.float32)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, vectors)
    docs = frozenset(r.document_id for r in records[::7])
    filters: list[tuple[SearchFilter, Callable[[IndexRecord], bool]]] = [
        (SearchFilter(kb_id="kb1"), lambda r: r.kb_id == "kb1"),
        (
            SearchFilter(kb_id="kb1", sources=frozenset({"wiki"}), tenant_ids=frozenset({"t2"})),
            lambda r: r.kb_id == "kb1" and r.source == "wiki" and r.tenant_id == "t2",
        ),
        (
            SearchFilter(kb_id="kb0", document_ids=docs, visibilities=frozenset({"public", ""})),
            lambda r: r.kb_id == "kb0" and r.document_id in docs and r.visibility in {"public", ""},
        ),
    ]
    for _ in range(5):
        query = rng.standard_normal(DIM).astype(np.float32)
        for search_filter, allow in filters:
            allowed = [allow(r) for r in records]
            for k in (1, 10, 1000):
                expected = brute_force(records, vectors, query, allowed, k)
                assert_same(store.search(query, search_filter, k), expected)


def test_filter_applies_before_ranking_so_low_scoring_rows_still_fill_k(tmp_path: Path) -> None:
    query = unit(np.ones(DIM, dtype=np.float32))
    records = [
        IndexRecord(f"c{i:03d}", "d1", "kb", "", visibility="secret" if i < 8 else "public")
        for i in range(200)
    ]
    # The 8 "secret" rows point away from the query; 192 public rows point towards it.
    vectors = np.tile(query, (200, 1))
    vectors[:8] = -query + 0.01 * np.arange(8)[:, None]
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, vectors)
    hits = store.search(query, SearchFilter(kb_id="kb", visibilities=frozenset({"secret"})), 5)
    assert len(hits) == 5
    assert all(int(h.chunk_id[1:]) < 8 for h in hits)
    assert all(h.score < 0 for h in hits)


def test_knowledge_bases_are_isolated(tmp_path: Path) -> None:
    vector = unit(np.arange(1, DIM + 1, dtype=np.float32))
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(
        [IndexRecord("a1", "da", "kb-a", ""), IndexRecord("b1", "db", "kb-b", "")],
        np.stack([vector, vector]),
    )
    assert [h.chunk_id for h in store.search(vector, SearchFilter(kb_id="kb-a"), 10)] == ["a1"]
    assert [h.chunk_id for h in store.search(vector, SearchFilter(kb_id="kb-b"), 10)] == ["b1"]
    assert store.search(vector, SearchFilter(kb_id="kb-c"), 10) == []


def test_document_whitelist_restricts_and_empty_whitelist_returns_nothing(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    records = make_records(60)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, rng.standard_normal((60, DIM)).astype(np.float32))
    query = rng.standard_normal(DIM).astype(np.float32)
    only = SearchFilter(kb_id="kb0", document_ids=frozenset({"d003", "unknown"}))
    hits = store.search(query, only, 100)
    assert {h.document_id for h in hits} == {"d003"}
    assert len(hits) == 10
    empty = SearchFilter(kb_id="kb0", document_ids=frozenset())
    assert store.search(query, empty, 100) == []
    assert store.search(query, SearchFilter(kb_id="kb0", sources=frozenset()), 100) == []


def test_none_scope_value_never_matches_while_empty_string_is_a_real_value(
    tmp_path: Path,
) -> None:
    vector = unit(np.ones(DIM, dtype=np.float32))
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(
        [IndexRecord("none", "d", "kb", ""), IndexRecord("empty", "d", "kb", "", dataset_id="")],
        np.stack([vector, vector]),
    )
    hits = store.search(vector, SearchFilter(kb_id="kb", dataset_ids=frozenset({""})), 10)
    assert [h.chunk_id for h in hits] == ["empty"]
    hostile = SearchFilter(kb_id="kb", dataset_ids=frozenset({"None", "null", "\x00"}))
    assert store.search(vector, hostile, 10) == []


def test_upsert_replaces_an_existing_chunk(tmp_path: Path) -> None:
    a, b = unit(np.eye(DIM, dtype=np.float32)[:2])
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert([IndexRecord("c1", "d1", "kb1", "")], a[None, :])
    store.upsert([IndexRecord("c1", "d2", "kb2", "")], b[None, :])
    assert store.count() == 1
    assert store.search(a, SearchFilter(kb_id="kb1"), 5) == []
    [hit] = store.search(b, SearchFilter(kb_id="kb2"), 5)
    assert (hit.chunk_id, hit.document_id) == ("c1", "d2")
    assert hit.score == pytest.approx(1.0)


def test_last_occurrence_wins_within_one_batch(tmp_path: Path) -> None:
    a, b = unit(np.eye(DIM, dtype=np.float32)[:2])
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(
        [IndexRecord("c1", "d1", "kb", ""), IndexRecord("c1", "d1", "kb", "")], np.stack([a, b])
    )
    assert store.count() == 1
    [hit] = store.search(b, SearchFilter(kb_id="kb"), 5)
    assert hit.score == pytest.approx(1.0)


def test_delete_by_chunk_and_by_document(tmp_path: Path, rng: np.random.Generator) -> None:
    records = make_records(30)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, rng.standard_normal((30, DIM)).astype(np.float32))
    query = rng.standard_normal(DIM).astype(np.float32)
    store.delete_chunks(["c00000", "c00001", "missing"])
    store.delete_document("d001")
    store.delete_document("no-such-document")
    assert store.count() == 18
    found = {
        h.chunk_id
        for kb in ("kb0", "kb1", "kb2")
        for h in store.search(query, SearchFilter(kb_id=kb), 100)
    }
    assert found == {r.chunk_id for r in records} - {"c00000", "c00001"} - {
        r.chunk_id for r in records if r.document_id == "d001"
    }


def test_ties_are_broken_by_chunk_id(tmp_path: Path) -> None:
    vector = unit(np.ones(DIM, dtype=np.float32))
    ids = ["c9", "c3", "c7", "c1", "c5"]
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert([IndexRecord(cid, "d", "kb", "") for cid in ids], np.tile(vector, (5, 1)))
    assert [h.chunk_id for h in store.search(vector, SearchFilter(kb_id="kb"), 3)] == [
        "c1",
        "c3",
        "c5",
    ]


def test_results_survive_restart(tmp_path: Path, rng: np.random.Generator) -> None:
    records = make_records(120)
    vectors = rng.standard_normal((120, DIM)).astype(np.float32)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records[:60], vectors[:60])
    store.upsert(records[60:], vectors[60:])
    store.delete_document("d002")
    store.upsert(records[:5], vectors[60:65])
    query = rng.standard_normal(DIM).astype(np.float32)
    flt = SearchFilter(kb_id="kb2", sources=frozenset({"wiki", "faq"}))
    before = store.search(query, flt, 20)
    store.close()
    reopened = DenseMatrixStore(tmp_path, DIM)
    assert reopened.search(query, flt, 20) == before
    assert reopened.count() == store.count()


def test_compaction_rewrites_files_and_keeps_results(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    records = make_records(200)
    vectors = rng.standard_normal((200, DIM)).astype(np.float32)
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert(records, vectors)
    doomed = [r.chunk_id for r in records if int(r.chunk_id[1:]) % 5 != 0]
    store.delete_chunks(doomed)
    assert (tmp_path / "vectors-1.f32").exists()
    assert not (tmp_path / "vectors-0.f32").exists()
    assert (tmp_path / "vectors-1.f32").stat().st_size == 40 * DIM * 4
    allowed_base = [int(r.chunk_id[1:]) % 5 == 0 for r in records]
    query = rng.standard_normal(DIM).astype(np.float32)
    for reopen in (False, True):
        current = DenseMatrixStore(tmp_path, DIM) if reopen else store
        for kb in ("kb0", "kb1", "kb2"):
            allowed = [a and r.kb_id == kb for a, r in zip(allowed_base, records, strict=True)]
            expected = brute_force(records, vectors, query, allowed, 50)
            assert_same(current.search(query, SearchFilter(kb_id=kb), 50), expected)


def test_dimension_is_validated(tmp_path: Path) -> None:
    store = DenseMatrixStore(tmp_path, DIM)
    with pytest.raises(ValueError, match="dimension"):
        store.upsert([IndexRecord("c", "d", "kb", "")], np.ones((1, DIM + 1), np.float32))
    with pytest.raises(ValueError, match="expected 2 vectors"):
        store.upsert([IndexRecord("c", "d", "kb", "")] * 2, np.ones((1, DIM), np.float32))
    with pytest.raises(ValueError, match="dimension"):
        store.search(np.ones(DIM - 1, np.float32), SearchFilter(kb_id="kb"), 3)
    with pytest.raises(ValueError, match="finite"):
        store.upsert([IndexRecord("c", "d", "kb", "")], np.full((1, DIM), np.nan, np.float32))
    assert store.count() == 0
    with pytest.raises(ValueError, match="dimension"):
        DenseMatrixStore(tmp_path, DIM * 2)


def test_torn_last_write_is_dropped_on_reopen(tmp_path: Path) -> None:
    vector = unit(np.ones(DIM, dtype=np.float32))
    store = DenseMatrixStore(tmp_path, DIM)
    store.upsert([IndexRecord("c1", "d", "kb", "")], vector[None, :])
    # Simulate a crash: vectors of a second batch written, its log line cut short.
    with (tmp_path / "vectors-0.f32").open("ab") as f:
        f.write(vector.tobytes())
    with (tmp_path / "log-0.jsonl").open("ab") as f:
        f.write(b'{"add": [["c2", "d"')
    reopened = DenseMatrixStore(tmp_path, DIM)
    assert [h.chunk_id for h in reopened.search(vector, SearchFilter(kb_id="kb"), 5)] == ["c1"]
    reopened.upsert([IndexRecord("c3", "d", "kb", "")], vector[None, :])
    again = DenseMatrixStore(tmp_path, DIM)
    assert {h.chunk_id for h in again.search(vector, SearchFilter(kb_id="kb"), 5)} == {"c1", "c3"}


def test_searches_during_writes_see_consistent_snapshots(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    store = DenseMatrixStore(tmp_path, DIM)
    records = make_records(600)
    vectors = rng.standard_normal((600, DIM)).astype(np.float32)
    errors: list[BaseException] = []

    def writer() -> None:
        for lo in range(0, 600, 20):
            store.upsert(records[lo : lo + 20], vectors[lo : lo + 20])
            store.delete_chunks([records[lo].chunk_id])

    def reader() -> None:
        try:
            for _ in range(300):
                for hit in store.search(vectors[0], SearchFilter(kb_id="kb1"), 10):
                    assert int(hit.document_id[1:]) % 3 == 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.count() == 570
