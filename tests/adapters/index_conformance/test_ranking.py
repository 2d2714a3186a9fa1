"""Both backends rank the same fixed corpus the same way: exact cosine, bilingual BM25."""

from __future__ import annotations

import numpy as np
import pytest
from index_corpus import CAPITAL, DIM, DOCS_KB, FOX, K8S, LEAVE, REFUND, bilingual, direction

from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit
from ragsift.ports import SearchIndex

DOCS = SearchFilter(kb_id=DOCS_KB)


def ids(hits: list[ChannelHit]) -> list[str]:
    return [h.chunk_id for h in hits]


@pytest.mark.parametrize(
    "query",
    [{K8S: 1.0, CAPITAL: 0.4}, {REFUND: 1.0}, {LEAVE: 1.0, FOX: 0.5}, {CAPITAL: 1.0, K8S: 0.2}],
    ids=["k8s-zh", "refund", "leave-en", "capital"],
)
def test_dense_top_k_and_cosines_equal_brute_force(
    shared_index: SearchIndex, query: dict[int, float]
) -> None:
    records, vectors = bilingual()
    # A small distinct weight on every axis: no two passages tie, so top-4 is one answer.
    vector = direction({axis: 0.03 * (axis + 1) for axis in range(DIM)} | query)
    cosines = vectors @ vector
    order = sorted(range(len(records)), key=lambda i: (-cosines[i], records[i].chunk_id))[:4]
    assert len({round(float(c), 4) for c in cosines}) == len(records)
    hits = shared_index.search_dense(vector, DOCS, 4)
    assert ids(hits) == [records[i].chunk_id for i in order]
    assert [h.score for h in hits] == pytest.approx([float(cosines[i]) for i in order], abs=1e-4)
    assert [h.document_id for h in hits] == [records[i].document_id for i in order]


def test_dense_query_need_not_be_unit_length(shared_index: SearchIndex) -> None:
    vector = direction({K8S: 1.0, CAPITAL: 0.4})
    assert ids(shared_index.search_dense(vector * 7.5, DOCS, 3)) == ids(
        shared_index.search_dense(vector, DOCS, 3)
    )


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("中国的首都北京在哪里？", "zh-capital"),
        ("手机价格", "zh-phone"),
        ("quick fox", "en-fox"),
        ("v2.1 集群升级", "mixed-k8s"),
        ("年假可以结转几天", "zh-leave"),
        ("refund invoice", "en-refund"),
        ("hotel limit per night", "en-hotel"),
        ("退款 发票", "zh-refund"),
    ],
)
def test_bm25_finds_the_passage_of_a_chinese_english_or_mixed_query_first(
    shared_index: SearchIndex, query: str, first: str
) -> None:
    hits = shared_index.search_sparse(query, DOCS, 5)
    assert ids(hits)[0] == first
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_bm25_mixed_query_matches_both_languages(shared_index: SearchIndex) -> None:
    found = ids(shared_index.search_sparse("kubernetes 集群 v2.1", DOCS, 10))
    assert found[:2] == ["mixed-k8s", "en-k8s"]


def test_bm25_is_case_insensitive_and_width_insensitive(shared_index: SearchIndex) -> None:
    lower = shared_index.search_sparse("quick fox kubernetes", DOCS, 5)
    assert lower == shared_index.search_sparse("QUICK Fox KUBERNETES", DOCS, 5)
    assert lower == shared_index.search_sparse("ＱＵＩＣＫ ｆｏｘ kubernetes", DOCS, 5)
    assert ids(lower)[0] == "en-fox"


def test_bm25_query_without_any_matching_word_finds_nothing(shared_index: SearchIndex) -> None:
    assert shared_index.search_sparse("zeppelin 火星探测器", DOCS, 5) == []


def test_a_punctuation_only_query_finds_nothing(shared_index: SearchIndex) -> None:
    assert shared_index.search_sparse("？！。，…… --- ***", DOCS, 10) == []
    assert shared_index.search_sparse("   ", DOCS, 10) == []


def test_query_syntax_in_user_text_is_just_text(shared_index: SearchIndex) -> None:
    hits = shared_index.search_sparse('kb_id != "" or fox^10 source:* (', DOCS, 10)
    assert ids(hits)[0] == "en-fox"
    assert {h.chunk_id for h in hits} <= {r.chunk_id for r in bilingual()[0]}


def test_limit_caps_both_channels(shared_index: SearchIndex) -> None:
    assert len(shared_index.search_dense(direction({REFUND: 1.0}), DOCS, 2)) == 2
    assert len(shared_index.search_sparse("the of days", DOCS, 1)) == 1
    assert shared_index.search_dense(direction({REFUND: 1.0}), DOCS, 0) == []
    assert shared_index.search_sparse("fox", DOCS, 0) == []


def test_a_query_vector_of_the_wrong_dimension_is_refused(shared_index: SearchIndex) -> None:
    with pytest.raises(ValueError, match="dimension"):
        shared_index.search_dense(np.ones(3, dtype=np.float32), DOCS, 3)
