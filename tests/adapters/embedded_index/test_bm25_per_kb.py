"""One BM25 index per knowledge base: statistics, deletes, layout, lock and restart."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import tantivy

from ragsift.adapters.embedded_index.bm25_schema import schema
from ragsift.adapters.embedded_index.bm25_store import (
    IndexInUse,
    SparseLayoutOutdated,
    TantivyBm25Store,
)
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

KB_A = [
    IndexRecord("a1", "da1", "a", "kubernetes cluster upgrade guide 集群 升级"),
    IndexRecord("a2", "da1", "a", "kubernetes network policy 网络 策略"),
    IndexRecord("a3", "da2", "a", "cluster backup and restore 集群 备份 恢复 guide"),
    IndexRecord("a4", "da2", "a", "billing invoice refund 退款 发票"),
]
# Overlapping vocabulary with other frequencies and lengths: in one shared index these
# would change the document frequencies and average length that kb "a" is scored with.
KB_B = [
    IndexRecord(f"b{i}", f"db{i % 3}", "b", " ".join(["kubernetes 集群"] * (i % 4 + 1) + ["x"] * i))
    for i in range(30)
]
QUERIES = ["kubernetes 集群 guide", "cluster 升级", "网络 kubernetes", "退款 guide backup"]
A = SearchFilter(kb_id="a")
B = SearchFilter(kb_id="b")


def ids(hits: list[ChannelHit]) -> list[str]:
    return [h.chunk_id for h in hits]


def results(store: TantivyBm25Store, search_filter: SearchFilter) -> list[list[ChannelHit]]:
    return [store.search(query, search_filter, 10) for query in QUERIES]


def test_a_kbs_scores_and_ranking_do_not_move_when_another_kb_is_added(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path / "s")
    store.upsert(KB_A)
    alone = results(store, A)
    assert all(alone)
    store.upsert(KB_B)
    assert store.search("kubernetes", B, 50)
    assert results(store, A) == alone  # exact float scores and order
    store.delete_document("db1")
    store.upsert([IndexRecord("b-new", "db9", "b", "guide guide cluster 升级 " * 5)])
    assert results(store, A) == alone
    store.close()
    # The same chunks in one kb (as in the former shared index) do score differently.
    merged = TantivyBm25Store(tmp_path / "merged")
    merged.upsert(KB_A + [IndexRecord(r.chunk_id, r.document_id, "a", r.text) for r in KB_B])
    shared = [
        [h for h in merged.search(query, A, 50) if h.chunk_id.startswith("a")][: len(hits)]
        for query, hits in zip(QUERIES, alone, strict=True)
    ]
    assert shared != alone
    merged.close()


def test_search_reads_only_the_filters_kb_and_an_unknown_kb_creates_nothing(
    tmp_path: Path,
) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(KB_A + KB_B)
    assert set(ids(store.search("kubernetes", A, 100))) == {"a1", "a2"}
    assert {h.chunk_id[0] for h in store.search("kubernetes 集群", B, 100)} == {"b"}
    before = sorted(p.name for p in tmp_path.iterdir())
    assert store.search("kubernetes", SearchFilter(kb_id="missing"), 10) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    kb_dirs = {hashlib.sha1(kb.encode()).hexdigest() for kb in ("a", "b")}
    assert set(before) == kb_dirs | {".lock"}
    assert not (tmp_path / "meta.json").exists()
    assert store.count() == len(KB_A) + len(KB_B)
    store.close()


def test_kb_ids_with_path_characters_stay_separate(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    kbs = ["../x", "x/..", "a b", "知识库", "x"]
    store.upsert([IndexRecord(f"c{i}", "d", kb, "alpha") for i, kb in enumerate(kbs)])
    for i, kb in enumerate(kbs):
        assert ids(store.search("alpha", SearchFilter(kb_id=kb), 10)) == [f"c{i}"]
    assert all(len(p.name) == 40 for p in tmp_path.iterdir() if p.is_dir())
    store.close()


def test_deletes_by_chunk_and_by_document_reach_every_kb(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(
        [
            IndexRecord("a1", "shared", "a", "alpha one"),
            IndexRecord("a2", "da", "a", "alpha two"),
            IndexRecord("a3", "shared", "a", "alpha three"),
            IndexRecord("b1", "db", "b", "alpha one"),
            IndexRecord("b2", "shared", "b", "alpha two"),
            IndexRecord("b3", "db", "b", "alpha three"),
            IndexRecord("c1", "dc", "c", "alpha"),
        ]
    )
    store.delete_chunks(["a1", "b1", "missing"])
    assert ids(store.search("alpha", A, 10)) == ["a2", "a3"]
    assert ids(store.search("alpha", B, 10)) == ["b2", "b3"]
    store.delete_document("shared")
    assert ids(store.search("alpha", A, 10)) == ["a2"]
    assert ids(store.search("alpha", B, 10)) == ["b3"]
    store.delete_chunks([])
    store.delete_document("missing")
    assert store.count() == 3
    store.close()


def test_a_chunk_upserted_into_another_kb_leaves_its_old_kb(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert([IndexRecord("c", "d", "a", "alpha"), IndexRecord("k", "d", "a", "alpha")])
    store.upsert([IndexRecord("c", "d", "b", "alpha beta")])
    assert ids(store.search("alpha", A, 10)) == ["k"]
    assert ids(store.search("alpha", B, 10)) == ["c"]
    # Last occurrence wins inside one batch, across kbs too.
    store.upsert([IndexRecord("c", "d", "a", "alpha"), IndexRecord("c", "d", "c", "alpha")])
    assert ids(store.search("alpha", A, 10)) == ["k"]
    assert store.search("alpha", B, 10) == []
    assert ids(store.search("alpha", SearchFilter(kb_id="c"), 10)) == ["c"]
    assert store.count() == 2
    store.close()


def test_every_kb_survives_restart(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(KB_A)
    store.upsert(KB_B)
    store.delete_chunks(["a2", "b3"])
    before = (results(store, A), results(store, B))
    store.close()
    reopened = TantivyBm25Store(tmp_path)
    assert reopened.count() == len(KB_A) + len(KB_B) - 2
    assert (results(reopened, A), results(reopened, B)) == before
    reopened.upsert([IndexRecord("a9", "d", "a", "fresh kubernetes")])
    reopened.delete_chunks(["b4"])
    assert "a9" in ids(reopened.search("fresh", A, 10))
    assert "b4" not in ids(reopened.search("kubernetes", B, 100))
    reopened.close()


def test_the_lock_is_released_by_close_and_by_the_death_of_its_process(tmp_path: Path) -> None:
    TantivyBm25Store(tmp_path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store\n"
            f"store = TantivyBm25Store({str(tmp_path)!r})\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(IndexInUse, match="another ragsift process"):
            TantivyBm25Store(tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    TantivyBm25Store(tmp_path).close()


def test_the_old_single_index_layout_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    legacy = tantivy.Index(schema(), path=str(tmp_path))
    writer = legacy.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(chunk_id="c", document_id="d", kb_id="a", text="x"))
    writer.commit()
    writer.wait_merging_threads()
    for _ in range(2):  # and the lock is not left held by the refused open
        with pytest.raises(SparseLayoutOutdated, match="rebuild-sparse"):
            TantivyBm25Store(tmp_path)


def test_searches_run_while_other_kbs_are_written(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(KB_A)
    expected = results(store, A)
    errors: list[BaseException] = []

    def write(kb: str) -> None:
        try:
            for i in range(5):
                store.upsert([IndexRecord(f"{kb}{i}", "d", kb, "kubernetes 集群 guide")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writers = [threading.Thread(target=write, args=(kb,)) for kb in ("w1", "w2", "w3")]
    for thread in writers:
        thread.start()
    while any(thread.is_alive() for thread in writers):
        assert results(store, A) == expected
    for thread in writers:
        thread.join()
    assert not errors
    assert store.count() == len(KB_A) + 15
    assert len(store.search("guide", SearchFilter(kb_id="w2"), 100)) == 5
    store.close()
