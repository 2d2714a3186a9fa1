"""A read-only index beside its writer: it sees every commit, writes nothing, refuses writes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.bm25_follow import FollowedBm25Store
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.adapters.embedded_index.index import EmbeddedIndex
from ragsift.domain.errors import IndexReadOnly
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

DIM = 16


def tree(root: Path) -> dict[str, str]:
    """Every file under `root` by relative path, with a digest of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def records(start: int, n: int, kb: str = "kb", text: str = "") -> list[IndexRecord]:
    return [IndexRecord(f"c{i:05d}", f"d{i // 4:04d}", kb, text or f"word{i} common")
            for i in range(start, start + n)]


def vectors(n: int, seed: int) -> NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def dense_ids(store: DenseMatrixStore, query: NDArray[np.float32], limit: int = 500) -> list[str]:
    return [h.chunk_id for h in store.search(query, SearchFilter(kb_id="kb"), limit)]


def test_a_dense_follower_sees_each_commit_and_ranks_as_the_writer(tmp_path: Path) -> None:
    writer = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=5)
    writer.upsert(records(0, 20), vectors(20, 1))
    follower = DenseMatrixStore(tmp_path, DIM, follow=True)
    query = vectors(1, 9)[0]
    assert follower.count() == 20
    writer.upsert(records(20, 30), vectors(30, 2))  # and a checkpoint on the way
    writer.delete_chunks(["c00003", "c00021"])
    writer.upsert(records(5, 1), vectors(1, 3))  # a replaced row
    assert follower.count() == writer.count() == 48
    assert dense_ids(follower, query) == dense_ids(writer, query)
    writer.close()


def test_a_dense_follower_follows_a_compaction_into_the_next_generation(tmp_path: Path) -> None:
    writer = DenseMatrixStore(tmp_path, DIM)
    writer.upsert(records(0, 40), vectors(40, 1))
    follower = DenseMatrixStore(tmp_path, DIM, follow=True)
    query = vectors(1, 9)[0]
    before = dense_ids(follower, query)
    writer.delete_chunks([f"c{i:05d}" for i in range(25)])  # over half dead: compacts
    assert not (tmp_path / "vectors-0.f32").exists()
    assert dense_ids(follower, query) == dense_ids(writer, query) == [
        c for c in before if int(c[1:]) >= 25]
    writer.upsert(records(100, 3), vectors(3, 4))
    assert follower.count() == 18
    writer.close()


def test_a_dense_follower_waits_for_a_torn_entry_and_never_repairs_it(tmp_path: Path) -> None:
    writer = DenseMatrixStore(tmp_path, DIM)
    writer.upsert(records(0, 4), vectors(4, 1))
    writer.close()
    log = tmp_path / "log-0.jsonl"
    entry = b'{"add": [["c9", "d9", "kb", null, null, null, null, null, 0, 0]]}\n'
    with (tmp_path / "vectors-0.f32").open("ab") as out:
        out.write(vectors(1, 5).tobytes())
    with log.open("ab") as out:
        out.write(entry[:30])  # the writer's next entry, half written
    files = tree(tmp_path)
    follower = DenseMatrixStore(tmp_path, DIM, follow=True)
    assert follower.count() == 4
    assert tree(tmp_path) == files  # a writer's open would have cut it off
    with log.open("ab") as out:
        out.write(entry[30:])  # ... and completed
    assert follower.count() == 5
    assert "c9" in dense_ids(follower, vectors(1, 5)[0])


def test_a_follower_refuses_writes_and_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    writer = EmbeddedIndex(tmp_path / "index", DIM)
    writer.upsert(records(0, 12, text="kubernetes cluster upgrade"), vectors(12, 1))
    files = tree(tmp_path)
    follower = EmbeddedIndex(tmp_path / "index", DIM, follow=True)  # beside the lock holder
    flt = SearchFilter(kb_id="kb")
    assert len(follower.search_dense(vectors(1, 2)[0], flt, 50)) == 12
    assert len(follower.search_sparse("kubernetes", flt, 50)) == 12
    for write in (lambda: follower.upsert(records(50, 1), vectors(1, 3)),
                  lambda: follower.delete_chunks(["c00001"]),
                  lambda: follower.delete_document("d0000"),
                  lambda: follower.rebuild_sparse("kb")):
        with pytest.raises(IndexReadOnly):
            write()
    follower.close()
    assert tree(tmp_path) == files
    writer.close()


def test_an_index_follower_finds_what_the_writer_committed_in_both_channels(
    tmp_path: Path,
) -> None:
    writer = EmbeddedIndex(tmp_path, DIM)
    follower = EmbeddedIndex(tmp_path, DIM, follow=True)  # before anything was written
    flt = SearchFilter(kb_id="kb")
    assert follower.search_sparse("kubernetes", flt, 10) == []
    assert follower.count() == 0
    writer.upsert(records(0, 3, text="kubernetes cluster upgrade"), vectors(3, 1))
    assert {h.chunk_id for h in follower.search_sparse("kubernetes", flt, 10)} == {
        "c00000", "c00001", "c00002"}
    assert follower.count() == 3
    writer.delete_document("d0000")
    assert follower.search_sparse("kubernetes", flt, 10) == []
    assert follower.search_dense(vectors(1, 2)[0], flt, 10) == []
    writer.close()


def test_a_bm25_follower_reopens_a_kb_whose_index_a_rebuild_switched_in(tmp_path: Path) -> None:
    writer = TantivyBm25Store(tmp_path)
    writer.upsert(records(0, 2, text="old words here"))
    follower = FollowedBm25Store(tmp_path)
    flt = SearchFilter(kb_id="kb")
    assert len(follower.search("old", flt, 10)) == 2
    with writer.rebuild("kb") as rebuild:
        rebuild.add(records(0, 3, text="fresh words"))
    assert follower.search("old", flt, 10) == []
    assert len(follower.search("fresh", flt, 10)) == 3
    writer.upsert(records(10, 1, kb="other", text="elsewhere"))  # a kb created meanwhile
    assert len(follower.search("elsewhere", SearchFilter(kb_id="other"), 10)) == 1
    assert follower.count() == 4
    writer.close()


def test_a_dense_follower_maps_the_writers_graph_and_answers_its_tail_exactly(
    tmp_path: Path,
) -> None:
    pytest.importorskip("faiss")
    ann = AnnSettings(min_rows=300, exact_max_rows=10, tail_rows=10_000_000,
                      save_rows=10_000_000, background=False)
    writer = DenseMatrixStore(tmp_path, DIM, ann)
    writer.upsert(records(0, 400), vectors(400, 1))
    writer.sync_ann()  # built and saved: the kb's graph file of generation 0
    follower = DenseMatrixStore(tmp_path, DIM, ann, follow=True)
    assert follower.ann_rows() == 400
    writer.upsert(records(400, 50), vectors(50, 2))  # past the graph: the exact tail
    query = vectors(50, 2)[7]
    assert dense_ids(follower, query, 5) == dense_ids(writer, query, 5)
    assert dense_ids(follower, query, 1) == ["c00407"]  # a tail row, its own vector
    writer.sync_ann()  # extended and saved again: the follower maps the new file
    follower.count()
    assert follower.ann_rows() == 450
    writer.close()


_WRITER = """
import sys
import numpy as np
from pathlib import Path
from ragsift.adapters.embedded_index.index import EmbeddedIndex
from ragsift.domain.index_records import IndexRecord

index = EmbeddedIndex(Path(sys.argv[1]), 16, checkpoint_rows=7)
rng = np.random.default_rng(0)
batch = 0
while True:  # until killed: each line names a batch both stores have committed
    rows = [IndexRecord(f"b{batch}-{i}", f"d{batch}", "kb", f"kubernetes batch{batch} item{i}")
            for i in range(5)]
    index.upsert(rows, rng.standard_normal((5, 16)).astype(np.float32))
    print(batch, flush=True)
    batch += 1
"""


def test_a_follower_keeps_every_commit_of_a_writer_killed_mid_write(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ})
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "0"
    follower = EmbeddedIndex(tmp_path, DIM, follow=True)  # while the writer writes
    flt = SearchFilter(kb_id="kb")
    for _ in range(30):
        last = int(writer.stdout.readline())
        assert follower.count() >= 5 * (last + 1)
    os.kill(writer.pid, signal.SIGKILL)  # at any point of its next batch
    writer.wait(timeout=10)
    for reader in (follower, EmbeddedIndex(tmp_path, DIM, follow=True)):
        assert reader.count() >= 5 * (last + 1)
        found = {h.chunk_id for h in reader.search_sparse(f"batch{last}", flt, 10)}
        assert found == {f"b{last}-{i}" for i in range(5)}
    files = tree(tmp_path)
    assert EmbeddedIndex(tmp_path, DIM, follow=True).count() == follower.count()
    assert tree(tmp_path) == files  # the torn batch is left for the next writer to repair
    again = EmbeddedIndex(tmp_path, DIM)  # the next writer repairs and goes on
    again.upsert(records(0, 2, text="after the crash"), vectors(2, 7))
    assert len(follower.search_sparse("crash", flt, 10)) == 2
    assert follower.count() == again.count()
    again.close()


def test_a_bm25_follower_reports_a_kb_index_without_meta_json_as_broken(tmp_path: Path) -> None:
    from ragsift.adapters.embedded_index.bm25_layout import SparseIndexBroken, kb_directory_name

    writer = TantivyBm25Store(tmp_path)
    writer.upsert(records(0, 2, text="some words"))
    writer.close()
    (tmp_path / kb_directory_name("kb") / "meta.json").unlink()
    with pytest.raises(SparseIndexBroken, match=r"meta\.json is missing"):
        FollowedBm25Store(tmp_path).search("words", SearchFilter(kb_id="kb"), 10)
    follower = FollowedBm25Store(tmp_path)
    assert follower.broken(["kb", "new"]) == {"kb": "meta.json is missing beside the index files"}
    assert follower.search("words", SearchFilter(kb_id="new"), 10) == []
