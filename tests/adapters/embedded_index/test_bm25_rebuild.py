"""Rebuilding a kb's BM25 index beside the live one: atomic switch, journal, crashes, upgrade."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
import tantivy

from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION
from ragsift.adapters.embedded_index.bm25_layout import ANALYZER_FILE, kb_directory_name
from ragsift.adapters.embedded_index.bm25_rebuild import RebuildInProgress
from ragsift.adapters.embedded_index.bm25_schema import schema
from ragsift.adapters.embedded_index.bm25_store import SparseLayoutOutdated, TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

WORDS = ["kubernetes", "集群", "升级", "network", "备份", "guide", "restore", "策略", "invoice"]
A = SearchFilter(kb_id="a")
QUERIES = ["kubernetes 集群", "升级 guide", "备份 restore network", "策略 invoice kubernetes"]


def corpus(kb: str, n: int) -> list[IndexRecord]:
    """n chunks over 10 documents with varied lengths and term mixes (deterministic)."""
    return [
        IndexRecord(
            f"{kb}{i}", f"{kb}-doc{i % 10}", kb,
            " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 7)),
        )
        for i in range(n)
    ]


def answers(store: TantivyBm25Store) -> list[list[ChannelHit]]:
    return [store.search(query, A, 20) for query in QUERIES]


def entries(root: Path) -> list[str]:
    return sorted(entry.name for entry in root.iterdir())


def test_a_rebuild_replaces_the_kbs_index_with_what_it_was_given(tmp_path: Path) -> None:
    fresh = corpus("a", 60)
    reference = TantivyBm25Store(tmp_path / "reference")
    reference.upsert(fresh)
    expected = answers(reference)
    reference.close()
    store = TantivyBm25Store(tmp_path / "store")
    store.upsert([IndexRecord(r.chunk_id, r.document_id, "a", "stale words") for r in fresh])
    store.upsert([IndexRecord("gone", "a-old", "a", "kubernetes 集群 obsolete")])
    store.upsert(corpus("b", 30))
    other = store.search("kubernetes", SearchFilter(kb_id="b"), 50)

    with store.rebuild("a") as rebuild:
        rebuild.add(fresh[:30])
        rebuild.add(fresh[30:])
    assert rebuild.added == 60

    assert answers(store) == expected  # the same hits and the same BM25 scores
    assert store.search("obsolete", A, 5) == []
    assert store.search("kubernetes", SearchFilter(kb_id="b"), 50) == other
    assert store.count() == 60 + 30
    store.close()
    reopened = TantivyBm25Store(tmp_path / "store")
    assert answers(reopened) == expected
    assert not any(name.endswith((".staged", ".retired")) for name in entries(tmp_path / "store"))
    reopened.close()


def test_every_search_during_rebuilds_returns_the_complete_correct_answer(
    tmp_path: Path,
) -> None:
    records = corpus("a", 400)
    store = TantivyBm25Store(tmp_path)
    store.upsert(records)
    store.upsert(corpus("b", 50))
    expected = answers(store)
    assert all(len(hits) == 20 for hits in expected)
    done = threading.Event()
    checked = [0] * 4
    wrong: list[object] = []

    def search(slot: int) -> None:
        while not done.is_set():
            try:
                got = answers(store)
            except BaseException as exc:  # pragma: no cover - reported below
                wrong.append(exc)
                return
            if got != expected:
                wrong.append(got)
                return
            checked[slot] += 1

    searchers = [threading.Thread(target=search, args=(slot,)) for slot in range(4)]
    for thread in searchers:
        thread.start()
    try:
        for _ in range(5):
            with store.rebuild("a") as rebuild:
                for start in range(0, len(records), 50):
                    rebuild.add(records[start : start + 50])
    finally:
        done.set()
        for thread in searchers:
            thread.join()
    assert wrong == []
    assert min(checked) > 0
    assert answers(store) == expected
    store.close()


def test_writes_during_a_rebuild_reach_the_live_index_and_the_rebuilt_one(
    tmp_path: Path,
) -> None:
    records = corpus("a", 40)
    store = TantivyBm25Store(tmp_path)
    store.upsert(records)
    late = IndexRecord("late", "a-late", "a", "kubernetes late arrival")
    moved = IndexRecord("a5", "a-doc5", "b", "now in kb b")

    with store.rebuild("a") as rebuild:
        store.upsert([late])
        store.delete_document("a-doc3")
        store.delete_chunks(["a7"])
        store.upsert([moved])
        # searches before the switch see the live index with every write applied
        assert [h.chunk_id for h in store.search("arrival", A, 5)] == ["late"]
        rebuild.add(records)  # the facts as read before those writes

    assert len(rebuild.journal) >= 4
    ids = {h.chunk_id for h in store.search(" ".join(WORDS) + " arrival", A, 100)}
    expected = {r.chunk_id for r in records if r.document_id != "a-doc3"} - {"a7", "a5"}
    assert ids == expected | {"late"}
    assert store.count() == len(expected) + 2  # plus "late" in a and "a5" in b
    store.close()


def test_an_error_during_a_rebuild_keeps_the_live_index_and_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(corpus("a", 30))
    expected = answers(store)

    with pytest.raises(ValueError, match="kbs \\['b'\\]"), store.rebuild("a") as rebuild:
        rebuild.add(corpus("a", 5))
        rebuild.add(corpus("b", 1))

    assert answers(store) == expected
    assert entries(tmp_path) == sorted([".lock", kb_directory_name("a")])
    with store.rebuild("a") as rebuild:  # and the kb can be rebuilt afterwards
        rebuild.add(corpus("a", 30))
    assert answers(store) == expected
    store.close()


def test_a_second_rebuild_of_the_same_kb_at_once_is_refused(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    with store.rebuild("a"), pytest.raises(RebuildInProgress, match="being rebuilt already"):
        store.rebuild("a").__enter__()
    store.close()


def test_a_kb_without_an_index_can_be_rebuilt(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path)
    with store.rebuild("a") as rebuild:
        rebuild.add(corpus("a", 10))
    assert store.count() == 10
    store.close()


def test_a_switch_interrupted_between_its_renames_is_completed_at_the_next_open(
    tmp_path: Path,
) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(corpus("a", 30))
    expected = answers(store)
    store.close()
    live = tmp_path / kb_directory_name("a")
    # The state after `live -> .retired` and before `.staged -> live`.
    shutil.copytree(live, tmp_path / f"{live.name}.staged")
    live.rename(tmp_path / f"{live.name}.retired")

    reopened = TantivyBm25Store(tmp_path)

    assert answers(reopened) == expected
    assert entries(tmp_path) == sorted([".lock", live.name])
    reopened.close()


def test_an_unfinished_build_left_by_a_crash_is_removed_at_the_next_open(
    tmp_path: Path,
) -> None:
    store = TantivyBm25Store(tmp_path)
    store.upsert(corpus("a", 30))
    expected = answers(store)
    store.close()
    staged = tmp_path / f"{kb_directory_name('a')}.staged"
    staged.mkdir()
    (staged / "half-written").write_bytes(b"x")

    reopened = TantivyBm25Store(tmp_path)

    assert answers(reopened) == expected
    assert not staged.exists()
    reopened.close()


def _legacy_index(root: Path) -> None:
    legacy = tantivy.Index(schema(), path=str(root))
    writer = legacy.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(chunk_id="c", document_id="d", kb_id="a", text="x"))
    writer.commit()
    writer.wait_merging_threads()


def test_the_old_layout_is_moved_aside_and_stays_refused_until_the_upgrade_finishes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sparse"
    root.mkdir()
    _legacy_index(root)
    with pytest.raises(SparseLayoutOutdated, match="ragsift rebuild-sparse"):
        TantivyBm25Store(root)

    upgrading = TantivyBm25Store(root, upgrade_layout=True)
    assert upgrading.upgrade_pending
    (aside,) = [entry for entry in tmp_path.iterdir() if entry.name.startswith("sparse.single")]
    assert (aside / "meta.json").is_file()
    with upgrading.rebuild("a") as rebuild:
        rebuild.add(corpus("a", 10))
    upgrading.close()
    with pytest.raises(SparseLayoutOutdated, match="has not finished"):
        TantivyBm25Store(root)  # an interrupted upgrade is not mistaken for a finished one

    resumed = TantivyBm25Store(root, upgrade_layout=True)
    assert resumed.count() == 10  # the kb rebuilt before the interruption is kept
    resumed.finish_upgrade()
    assert not resumed.upgrade_pending
    resumed.close()
    store = TantivyBm25Store(root)
    assert store.count() == 10
    assert entries(root) == sorted([".lock", kb_directory_name("a")])
    store.close()


def _old_schema_kb_index(directory: Path) -> None:
    """A kb index written before chunks carried versions and roles (the earlier schema)."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("document_id", stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("kb_id", "source", "tenant_id", "dataset_id", "visibility"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    directory.mkdir()
    old = tantivy.Index(builder.build(), path=str(directory))
    writer = old.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(chunk_id="c", document_id="d", kb_id="a", text="x"))
    writer.commit()
    writer.wait_merging_threads()


def test_kb_indexes_of_an_older_schema_are_rebuilt_by_the_upgrade(tmp_path: Path) -> None:
    _old_schema_kb_index(tmp_path / kb_directory_name("a"))
    _old_schema_kb_index(tmp_path / kb_directory_name("gone"))  # a kb no longer in the facts
    store = TantivyBm25Store(tmp_path)
    with pytest.raises(SparseLayoutOutdated, match="ragsift rebuild-sparse"):
        store.count()
    store.close()

    upgrading = TantivyBm25Store(tmp_path, upgrade_layout=True)
    assert upgrading.upgrade_pending and upgrading.count() == 0
    with upgrading.rebuild("a") as rebuild:
        rebuild.add(corpus("a", 10))
    assert upgrading.count() == 10
    upgrading.finish_upgrade()
    upgrading.close()

    store = TantivyBm25Store(tmp_path)
    assert store.count() == 10
    assert entries(tmp_path) == sorted([".lock", kb_directory_name("a")])
    store.close()


def test_an_index_keeps_its_analyzer_version_until_a_rebuild_moves_it_to_the_current(
    tmp_path: Path,
) -> None:
    record = IndexRecord("s1", "d1", "a", "Studies of running engines")
    store = TantivyBm25Store(tmp_path)
    store.upsert([record])
    assert [h.chunk_id for h in store.search("study", A, 5)] == ["s1"]  # v2 stems both sides
    store.close()
    # An index from before analyzer versions has no marker: it is read as version 1, and
    # queries are analyzed like its text was (unstemmed), so the stemmed query no longer hits.
    (tmp_path / kb_directory_name("a") / ANALYZER_FILE).unlink()
    store = TantivyBm25Store(tmp_path)
    assert store.search("study", A, 5) == []
    assert [h.chunk_id for h in store.search("running", A, 5)] == []  # indexed as "run"
    with store.rebuild("a") as rebuild:
        rebuild.add([record])
    assert [h.chunk_id for h in store.search("study", A, 5)] == ["s1"]
    marker = tmp_path / kb_directory_name("a") / ANALYZER_FILE
    assert json.loads(marker.read_text("utf-8")) == {"version": CURRENT_VERSION}
    store.close()
