"""MilvusIndex on milvus-lite: Milvus' own hybrid search, limits, sharing, locking, schema."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.milvus import MilvusIndex
from ragsift.adapters.milvus.connection import MilvusIndexInUse, MilvusUnavailable
from ragsift.adapters.milvus.filter_expr import UnsupportedFilter
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import RankedList
from ragsift.retrieval.fusion import rrf

DIM = 8
KB = SearchFilter(kb_id="kb")
TEXTS = [
    "北京是中国的首都",
    "Kubernetes cluster upgrade guide v2.1",
    "如何升级 Kubernetes 集群",
    "quick brown fox",
    "苹果手机价格",
    "refund within 14 days",
    "年假可以结转五天",
    "hotel limit per night",
]


def corpus() -> tuple[list[IndexRecord], np.ndarray]:
    records = [IndexRecord(f"c{i}", f"d{i // 2}", "kb", text) for i, text in enumerate(TEXTS)]
    records.append(IndexRecord("other", "dx", "kb2", "Kubernetes 集群 北京 fox"))
    vectors = np.random.default_rng(2).standard_normal((len(records), DIM)).astype(np.float32)
    return records, vectors


@pytest.fixture
def index(milvus_lite: None, tmp_path: Path) -> Iterator[MilvusIndex]:
    opened = MilvusIndex(str(tmp_path / "m.db"), "chunks", DIM)
    records, vectors = corpus()
    opened.upsert(records, vectors)
    yield opened
    opened.close()


def test_milvus_rrf_hybrid_scores_equal_ragsift_rrf_of_the_two_channels(
    index: MilvusIndex,
) -> None:
    records, vectors = corpus()
    query, vector = "kubernetes 集群 fox", vectors[2] + vectors[5]
    dense = index.search_dense(vector, KB, 20)
    sparse = index.search_sparse(query, KB, 20)
    assert len(dense) == 8 and 2 <= len(sparse) < 8
    ours = {
        hit.chunk_id: hit.fusion_score
        for hit in rrf(
            [RankedList(name="dense:o", hits=tuple(dense)),
             RankedList(name="sparse:o", hits=tuple(sparse))],
            k=60,
        )
    }
    native = index.search_hybrid(vector, query, KB, 20, ranker="rrf", rrf_k=60)
    assert {h.chunk_id: pytest.approx(h.score, abs=1e-6) for h in native} == ours
    assert [h.document_id for h in native] == [
        next(r.document_id for r in records if r.chunk_id == h.chunk_id) for h in native
    ]


def test_milvus_hybrid_applies_the_filter_inside_each_request(index: MilvusIndex) -> None:
    _, vectors = corpus()
    only = SearchFilter(kb_id="kb", document_ids=frozenset({"d1"}))
    for ranker in ("rrf", "weighted"):
        hits = index.search_hybrid(vectors[8], "kubernetes 集群 北京 fox", only, 10, ranker=ranker)
        assert {h.chunk_id for h in hits} == {"c2", "c3"}
        other = index.search_hybrid(vectors[8], "kubernetes", SearchFilter(kb_id="kb2"), 10,
                                    ranker=ranker)
        assert [h.chunk_id for h in other] == ["other"]
    nothing = SearchFilter(kb_id="kb", document_ids=frozenset())
    assert index.search_hybrid(vectors[0], "kubernetes", nothing, 10) == []


def test_milvus_hybrid_with_a_punctuation_query_is_dense_only(index: MilvusIndex) -> None:
    _, vectors = corpus()
    hybrid = index.search_hybrid(vectors[4], "？！", KB, 3, ranker="rrf")
    dense = index.search_dense(vectors[4], KB, 3)
    assert [h.chunk_id for h in hybrid] == [h.chunk_id for h in dense]


def test_stored_text_is_lowercased_and_width_normalised(index: MilvusIndex) -> None:
    _, vectors = corpus()
    index.upsert([IndexRecord("wide", "dw", "kb", "ＺＥＢＲＡ Crossing")], vectors[:1])
    assert [h.chunk_id for h in index.search_sparse("zebra crossing", KB, 5)] == ["wide"]


def test_an_oversized_text_is_refused_before_anything_is_written(index: MilvusIndex) -> None:
    records = [
        IndexRecord("ok", "d", "kb", "fine words"),
        IndexRecord("big", "d", "kb", "长" * 30_000),  # 90,000 bytes in UTF-8
    ]
    with pytest.raises(ValueError, match="65535"):
        index.upsert(records, np.ones((2, DIM), dtype=np.float32))
    assert index.count() == len(corpus()[0])
    assert index.search_sparse("fine", KB, 5) == []


def test_zero_vectors_are_refused(index: MilvusIndex) -> None:
    with pytest.raises(ValueError, match="zero vectors"):
        index.upsert([IndexRecord("z", "d", "kb", "x")], np.zeros((1, DIM), dtype=np.float32))
    with pytest.raises(ValueError, match="zero vectors"):
        index.search_dense(np.zeros(DIM, dtype=np.float32), KB, 3)


class _FilterWithRegions(SearchFilter):
    regions: frozenset[str] | None = None


def test_a_filter_field_it_cannot_compile_fails_the_search(index: MilvusIndex) -> None:
    regional = _FilterWithRegions(kb_id="kb", regions=frozenset({"eu"}))
    with pytest.raises(UnsupportedFilter):
        index.search_sparse("kubernetes", regional, 5)
    with pytest.raises(UnsupportedFilter):
        index.search_dense(np.ones(DIM, dtype=np.float32), regional, 5)


def test_chunk_and_faq_collections_share_one_file_and_close_independently(
    milvus_lite: None, tmp_path: Path
) -> None:
    path = str(tmp_path / "shared.db")
    chunks = MilvusIndex(path, "ragsift_chunks", DIM)
    faq = MilvusIndex(path, "ragsift_faq", DIM)
    chunks.upsert([IndexRecord("c", "d", "kb", "年假 carry over")], np.ones((1, DIM), np.float32))
    faq.upsert([IndexRecord("f", "f", "kb", "年假有几天")], np.ones((1, DIM), np.float32))
    assert [h.chunk_id for h in chunks.search_sparse("年假", KB, 5)] == ["c"]
    chunks.close()
    assert [h.chunk_id for h in faq.search_sparse("年假", KB, 5)] == ["f"]  # still served
    faq.close()
    reopened = MilvusIndex(path, "ragsift_faq", DIM)
    assert reopened.count() == 1
    reopened.close()


HOLDER = """
import sys, time
from ragsift.adapters.milvus import MilvusIndex
index = MilvusIndex(sys.argv[1], "chunks", 8)
print("ready", flush=True)
if sys.argv[2] == "hold":
    time.sleep(120)
index.close()
"""


def test_a_data_file_is_held_by_one_process_until_it_closes(
    milvus_lite: None, tmp_path: Path
) -> None:
    path = str(tmp_path / "locked.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path, "hold"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(MilvusIndexInUse, match="one process per data file"):
            MilvusIndex(path, "chunks", DIM)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    mine = MilvusIndex(path, "chunks", DIM)
    mine.close()
    # ... and after close this process no longer holds it either
    done = subprocess.run(
        [sys.executable, "-c", HOLDER, path, "release"], capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ready"


def test_a_collection_of_another_layout_is_refused(milvus_lite: None, tmp_path: Path) -> None:
    from pymilvus import DataType, MilvusClient

    path = str(tmp_path / "foreign.db")
    client = MilvusClient(path)
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=DIM)
    client.create_collection("chunks", schema=schema)
    client.close()
    with pytest.raises(ValueError, match="lacks the fields"):
        MilvusIndex(path, "chunks", DIM)
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def test_an_unreachable_server_is_a_clear_error(milvus_lite: None) -> None:
    with pytest.raises(MilvusUnavailable, match=r"cannot connect to Milvus at http://127\.0\.0\.1:1"):
        MilvusIndex("http://127.0.0.1:1", "chunks", DIM, timeout_s=2)
