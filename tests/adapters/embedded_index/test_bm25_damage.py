"""A kb's BM25 index damaged on disk: only that kb fails, and its rebuild repairs it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.bm25_layout import ANALYZER_FILE, kb_directory_name
from ragsift.adapters.embedded_index.bm25_store import SparseIndexBroken, TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from support.damage import DAMAGES, damage_bm25

A = SearchFilter(kb_id="a")
B = SearchFilter(kb_id="b")
QUERIES = ("kubernetes 集群", "backup guide", "升级 network")


def corpus(kb: str, n: int = 24) -> list[IndexRecord]:
    words = ["kubernetes", "集群", "升级", "network", "备份", "guide", "backup", "restore"]
    return [
        IndexRecord(f"{kb}{i}", f"{kb}-doc{i % 4}", kb,
                    " ".join(words[(i * k) % len(words)] for k in range(1, 3 + i % 5)))
        for i in range(n)
    ]


def answers(store: TantivyBm25Store, search_filter: SearchFilter) -> list[list[ChannelHit]]:
    return [store.search(query, search_filter, 10) for query in QUERIES]


def damaged_store(root: Path, how: str) -> tuple[TantivyBm25Store, list[list[ChannelHit]]]:
    """Kbs a and b written and closed, a's index damaged, the store opened again; b's answers."""
    store = TantivyBm25Store(root)
    store.upsert(corpus("a") + corpus("b"))
    expected_b = answers(store, B)
    assert all(expected_b)
    store.close()
    damage_bm25(root / kb_directory_name("a"), how)
    return TantivyBm25Store(root), expected_b


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_kb_index_fails_only_that_kbs_searches_and_writes(
    tmp_path: Path, how: str
) -> None:
    store, expected_b = damaged_store(tmp_path, how)  # opening does not fail

    with pytest.raises(SparseIndexBroken, match="ragsift rebuild-sparse --kb a"):
        store.search("kubernetes", A, 10)
    batch = [IndexRecord("b-new", "b-doc9", "b", "kubernetes fresh"), *corpus("a")[:2]]
    with pytest.raises(SparseIndexBroken, match="knowledge base a cannot be read"):
        store.upsert(batch)
    with pytest.raises(SparseIndexBroken):
        store.check_writable(["b", "a"])

    assert answers(store, B) == expected_b  # nothing of the refused batch was written
    assert store.count() == len(corpus("b"))
    assert set(store.broken(["a", "b", "unknown"])) == {"a"}
    store.delete_document("b-doc1")  # deletes skip the damaged kb
    assert all(h.document_id != "b-doc1" for h in store.search("kubernetes 集群", B, 50))
    assert store.analyzer("a")[0] == store.analyzer("new")[0]  # never raises: see analyzer
    store.close()


@pytest.mark.parametrize("how", DAMAGES)
def test_a_rebuild_replaces_a_damaged_index_without_reading_it(tmp_path: Path, how: str) -> None:
    reference = TantivyBm25Store(tmp_path / "reference")
    reference.upsert(corpus("a"))
    expected_a = answers(reference, A)
    reference.close()
    root = tmp_path / "store"
    store, expected_b = damaged_store(root, how)

    with store.rebuild("a") as rebuild:
        rebuild.add(corpus("a"))

    assert answers(store, A) == expected_a
    assert store.broken(["a", "b"]) == {}
    store.upsert([IndexRecord("a-late", "a-doc9", "a", "kubernetes late")])
    store.close()
    assert sorted(e.name for e in root.iterdir()) == sorted(
        [".lock", kb_directory_name("a"), kb_directory_name("b")])
    reopened = TantivyBm25Store(root)
    assert answers(reopened, B) == expected_b
    assert "a-late" in {h.chunk_id for h in reopened.search("late", A, 5)}
    reopened.close()


def test_writes_into_a_damaged_kb_while_it_is_rebuilt_reach_the_new_index(tmp_path: Path) -> None:
    store, _ = damaged_store(tmp_path, "emptied")
    late = IndexRecord("a-late", "a-doc9", "a", "kubernetes late arrival")

    with store.rebuild("a") as rebuild:
        store.check_writable(["a"])
        store.upsert([late])  # the live index is damaged: kept in the journal only
        store.delete_document("a-doc1")
        rebuild.add(corpus("a"))

    ids = {h.chunk_id for h in store.search("kubernetes 集群 升级 network 备份 guide late", A, 50)}
    assert "a-late" in ids
    assert not ids & {r.chunk_id for r in corpus("a") if r.document_id == "a-doc1"}
    store.close()


def test_a_kb_directory_whose_index_was_never_created_is_an_empty_kb(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    store.close()
    # a first write that stopped after the analyzer marker, before tantivy created the index
    directory = tmp_path / kb_directory_name("a")
    directory.mkdir()
    (directory / ANALYZER_FILE).write_text('{"version": 2}', "utf-8")
    store = TantivyBm25Store(tmp_path)

    assert store.search("kubernetes", A, 10) == []
    assert store.broken(["a"]) == {}
    store.upsert(corpus("a"))
    assert store.search("kubernetes", A, 10)
    store.close()


def modes_bind(tmp_path: Path) -> bool:
    """Whether this process is refused a directory of mode 0 (root, say, is not)."""
    probe = tmp_path / "probe"
    probe.mkdir(mode=0)
    try:
        os.listdir(probe)
    except PermissionError:
        return True
    finally:
        probe.rmdir()
    return False


def test_an_unreadable_kb_directory_is_damaged_and_its_rebuild_removes_it(tmp_path: Path) -> None:
    if not modes_bind(tmp_path):
        pytest.skip("this process reads a directory whatever its mode (root)")
    store = TantivyBm25Store(tmp_path)
    store.upsert(corpus("a") + corpus("b"))
    store.close()
    (tmp_path / kb_directory_name("a")).chmod(0)
    try:
        store = TantivyBm25Store(tmp_path)
        with pytest.raises(SparseIndexBroken, match="PermissionError"):
            store.search("kubernetes", A, 10)
        assert store.search("kubernetes", B, 10)
        with store.rebuild("a") as rebuild:
            rebuild.add(corpus("a"))
        assert store.search("kubernetes", A, 10)
        store.close()
        assert not [e for e in tmp_path.iterdir() if e.name.endswith((".retired", ".staged"))]
    finally:
        for entry in tmp_path.iterdir():
            entry.chmod(0o755)


def test_the_embedded_index_opens_and_refuses_a_write_before_the_dense_store_changes(
    tmp_path: Path,
) -> None:
    records = corpus("a") + corpus("b")
    vectors = np.random.default_rng(3).standard_normal((len(records), 8)).astype(np.float32)
    index = EmbeddedIndex(tmp_path, 8)
    index.upsert(records, vectors)
    index.close()
    damage_bm25(tmp_path / "sparse" / kb_directory_name("a"), "emptied")
    index = EmbeddedIndex(tmp_path, 8)

    assert set(index.sparse_problems(["a", "b"])) == {"a"}
    with pytest.raises(SparseIndexBroken):
        index.upsert(records[:1], -vectors[:1])
    assert index.count() == len(records)
    dense = index.search_dense(vectors[0], A, 1)
    assert [h.chunk_id for h in dense] == ["a0"]
    assert dense[0].score == pytest.approx(1.0)  # the old vector: the refused one was not written
    assert index.search_sparse("kubernetes", B, 5)
    index.close()


def test_a_filter_allowing_nothing_answers_empty_without_opening_a_damaged_index(
    tmp_path: Path,
) -> None:
    store, _ = damaged_store(tmp_path, DAMAGES[0])
    nothing = SearchFilter(kb_id="a", document_ids=frozenset())
    assert store.search("kubernetes", nothing, 10) == []
    with pytest.raises(SparseIndexBroken):
        store.search("kubernetes", A, 10)
    store.close()
