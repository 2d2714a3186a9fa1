"""The dense store's row checkpoint: an open from it equals a replay of the whole log."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index.dense_columns import Vocabulary
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

DIM = 8
FILTERS = [
    SearchFilter(kb_id="kb0"),
    SearchFilter(kb_id="kb1", sources=frozenset({"wiki"})),
    SearchFilter(kb_id="kb0", roles=frozenset({"hr"})),
    SearchFilter(kb_id="kb1", version_seq=2),
    SearchFilter(kb_id="kb0", document_ids=frozenset({"d001", "d004", "d007"})),
    SearchFilter(kb_id="kb1", tenant_ids=frozenset({"t2"}), visibilities=frozenset({""})),
]


def records(start: int, stop: int, version: int = 0) -> list[IndexRecord]:
    return [
        IndexRecord(
            chunk_id=f"c{i:05d}", document_id=f"d{i // 10:03d}", kb_id=f"kb{(i // 10) % 2}",
            text="", source=("wiki", "faq", None)[i % 3], tenant_id=("t1", "t2")[i % 2],
            dataset_id="ds" if i % 5 == 0 else None, visibility=("public", "", None)[i % 3],
            allowed_roles=("hr", "it")[: i % 3], valid_from_seq=version, valid_to_seq=0,
        )
        for i in range(start, stop)
    ]


def vectors(rows: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, DIM)).astype(np.float32)


def workload(store: DenseMatrixStore) -> None:
    """Adds, replacements, a version retirement, chunk and document deletes."""
    store.upsert(records(0, 300), vectors(300, 1))
    store.upsert(records(250, 400, version=2), vectors(150, 2))
    retired = [dataclasses.replace(r, valid_to_seq=3) for r in records(0, 20)]
    store.update_records(retired)
    store.delete_chunks([f"c{i:05d}" for i in range(40, 60)])
    store.delete_document("d012")


def answers(store: DenseMatrixStore) -> list[object]:
    queries = vectors(5, 99)
    found: list[object] = [store.count(), store.document_chunk_ids("d003")]
    for flt in FILTERS:
        found.extend(store.search(q, flt, 25) for q in queries)
    return found


def replayed(directory: Path) -> list[object]:
    """What a store answers from its log alone (the checkpoint removed)."""
    for path in directory.glob("columns-*"):
        path.unlink()
    return answers(DenseMatrixStore(directory, DIM))


def test_a_reopen_from_the_checkpoint_answers_like_a_replay_of_the_whole_log(
    tmp_path: Path,
) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    workload(store)
    before = answers(store)
    store.close()
    assert (tmp_path / "columns-0.npz").exists()
    assert answers(DenseMatrixStore(tmp_path, DIM)) == before
    assert replayed(tmp_path) == before


def test_log_entries_after_the_checkpoint_are_replayed_on_top_of_it(tmp_path: Path) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    store.upsert(records(0, 300), vectors(300, 1))  # checkpointed here
    saved = (tmp_path / "columns-0.npz").read_bytes()
    # fewer changes than the threshold, and no close (as after a kill): only the log has them
    store.upsert(records(300, 350), vectors(50, 3))
    store.delete_chunks(["c00005", "c00310"])
    store.update_records([dataclasses.replace(r, kb_id="kb1") for r in records(0, 3)])
    before = answers(store)
    assert (tmp_path / "columns-0.npz").read_bytes() == saved
    reopened = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    assert answers(reopened) == before
    # writes after such an open find the rows of both parts by chunk id
    reopened.upsert(records(0, 1) + records(349, 350), vectors(2, 4))
    reopened.delete_chunks(["c00001", "c00320"])
    after = answers(reopened)
    assert after[0] == store.count() - 2
    assert replayed(tmp_path) == after


def test_a_damaged_checkpoint_is_ignored_and_the_log_replayed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    workload(store)
    before = answers(store)
    store.close()
    path = tmp_path / "columns-0.npz"
    data = path.read_bytes()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF  # inside a member: its CRC no longer matches
    for damaged in (data[: len(data) // 2], b"not a checkpoint", data[:-100] + b"\0" * 100,
                    bytes(flipped)):
        path.write_bytes(damaged)
        with caplog.at_level(logging.WARNING):
            assert answers(DenseMatrixStore(tmp_path, DIM)) == before
        assert "ignoring the dense checkpoint" in caplog.text
        caplog.clear()


def test_a_checkpoint_covering_more_log_than_there_is_is_ignored(tmp_path: Path) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    store.upsert(records(0, 300), vectors(300, 1))
    store.close()
    log = tmp_path / "log-0.jsonl"
    kept = log.read_bytes()
    # the log of another store of the same generation, shorter than the checkpoint says
    log.write_bytes(kept[: kept.index(b"\n") + 1])
    (tmp_path / "vectors-0.f32").write_bytes(vectors(300, 1).tobytes())
    assert DenseMatrixStore(tmp_path, DIM).count() == 300  # the first entry's 300 rows


def test_compaction_replaces_the_checkpoint_with_one_of_the_new_generation(
    tmp_path: Path,
) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    store.upsert(records(0, 400), vectors(400, 1))
    assert (tmp_path / "columns-0.npz").exists()
    store.delete_chunks([f"c{i:05d}" for i in range(0, 400) if i % 4])  # compacts
    assert sorted(p.name for p in tmp_path.glob("columns-*")) == ["columns-1.npz"]
    before = answers(store)
    assert answers(DenseMatrixStore(tmp_path, DIM)) == before
    assert replayed(tmp_path) == before


def test_a_few_changes_do_not_rewrite_the_checkpoint_at_close(tmp_path: Path) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    store.upsert(records(0, 300), vectors(300, 1))
    saved = (tmp_path / "columns-0.npz").read_bytes()
    store.upsert(records(300, 310), vectors(10, 2))
    store.close()
    assert (tmp_path / "columns-0.npz").read_bytes() == saved
    assert DenseMatrixStore(tmp_path, DIM).count() == 310


def test_an_unfinished_checkpoint_file_is_removed_at_open(tmp_path: Path) -> None:
    store = DenseMatrixStore(tmp_path, DIM, checkpoint_rows=100)
    store.upsert(records(0, 300), vectors(300, 1))
    store.close()
    (tmp_path / "columns-0.npz.tmp").write_bytes(b"half a checkpoint")
    (tmp_path / "columns-7.npz").write_bytes(b"another generation's")
    assert DenseMatrixStore(tmp_path, DIM).count() == 300
    assert sorted(p.name for p in tmp_path.glob("columns-*")) == ["columns-0.npz"]


def test_checkpoint_rows_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="checkpoint_rows"):
        DenseMatrixStore(tmp_path, DIM, checkpoint_rows=0)


def test_vocabulary_codes_values_in_first_seen_order_and_none_as_zero() -> None:
    vocab = Vocabulary()
    rows = [("c1", "d1", "kb", None, "t", None, None, '["hr"]', 2, 0),
            ("c2", "d2", "kb", "wiki", "t", None, None, None, 0, 5),
            ("c3", "d1", "kb", "wiki", None, None, None, '["hr"]', 0, 0)]
    codes = vocab.encode(rows)
    assert codes["document_id"].tolist() == [1, 2, 1]
    assert codes["source"].tolist() == [0, 1, 1]
    assert codes["allowed_roles"].tolist() == [1, 0, 1]
    assert codes["valid_from_seq"].tolist() == [2, 0, 0]
    assert codes["valid_to_seq"].tolist() == [0, 5, 0]
    assert vocab.value("document_id", 2) == "d2" and vocab.value("source", 0) is None
    # a later batch reuses the codes and extends the vocabulary
    assert vocab.encode([("c4", "d3", "kb", "wiki", None, None, None, None, 0, 0)])[
        "document_id"].tolist() == [3]
