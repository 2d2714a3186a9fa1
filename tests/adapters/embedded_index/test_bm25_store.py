"""BM25 over tantivy: bilingual ranking, score-neutral filters, literal filter values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.embedded_index.bm25_store import IndexInUse, TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

CORPUS = [
    IndexRecord(
        "zh-capital", "doc-zh", "kb", "北京是中华人民共和国的首都，有很多历史古迹。", "wiki"
    ),
    IndexRecord("en-fox", "doc-en", "kb", "The Quick Brown Fox jumps over the lazy dog.", "wiki"),
    IndexRecord("zh-phone", "doc-zh", "kb", "苹果公司发布了新款手机，价格比去年更高。", "news"),
    IndexRecord(
        "en-k8s", "doc-en", "kb", "Kubernetes cluster upgrade guide for version v2.1", "manual"
    ),
    IndexRecord("mixed-k8s", "doc-mixed", "kb", "如何升级 Kubernetes 集群到 v2.1 版本", "manual"),
    IndexRecord("other-kb", "doc-other", "kb-other", "Kubernetes 集群 v2.1 北京 首都 fox", "wiki"),
]

ALL = SearchFilter(kb_id="kb")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TantivyBm25Store]:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.upsert(CORPUS)
    yield bm25
    bm25.close()


def ids(hits: list[ChannelHit]) -> list[str]:
    return [h.chunk_id for h in hits]


def test_chinese_query_finds_the_chinese_document_first(store: TantivyBm25Store) -> None:
    assert ids(store.search("中国的首都北京在哪里？", ALL, 3))[0] == "zh-capital"
    assert ids(store.search("手机价格", ALL, 3))[0] == "zh-phone"


def test_english_query_is_case_insensitive(store: TantivyBm25Store) -> None:
    lower = store.search("quick fox", ALL, 3)
    upper = store.search("QUICK FOX", ALL, 3)
    assert ids(lower)[0] == "en-fox"
    assert lower == upper


def test_mixed_query_ranks_the_chunk_matching_both_languages_first(
    store: TantivyBm25Store,
) -> None:
    hits = store.search("v2.1 集群升级", ALL, 5)
    assert ids(hits)[0] == "mixed-k8s"
    assert "en-k8s" in ids(hits)
    assert "other-kb" not in ids(hits)


def test_filter_clauses_do_not_change_bm25_scores(store: TantivyBm25Store) -> None:
    unfiltered = {h.chunk_id: h.score for h in store.search("kubernetes v2.1 集群 fox", ALL, 10)}
    assert len(unfiltered) >= 3
    filters = [
        SearchFilter(kb_id="kb", sources=frozenset({"manual"})),
        SearchFilter(kb_id="kb", document_ids=frozenset({"doc-en", "doc-mixed"})),
        SearchFilter(kb_id="kb", document_ids=frozenset({"doc-en"}), sources=frozenset({"wiki"})),
    ]
    for search_filter in filters:
        hits = store.search("kubernetes v2.1 集群 fox", search_filter, 10)
        assert hits
        for hit in hits:
            assert hit.score == pytest.approx(unfiltered[hit.chunk_id], rel=1e-6)


def test_document_whitelist_and_empty_whitelist(store: TantivyBm25Store) -> None:
    only_en = SearchFilter(kb_id="kb", document_ids=frozenset({"doc-en"}))
    assert set(ids(store.search("kubernetes fox 北京", only_en, 10))) == {"en-fox", "en-k8s"}
    empty = SearchFilter(kb_id="kb", document_ids=frozenset())
    assert store.search("kubernetes fox 北京", empty, 10) == []


def test_knowledge_bases_are_isolated(store: TantivyBm25Store) -> None:
    assert ids(store.search("北京 fox", SearchFilter(kb_id="kb-other"), 10)) == ["other-kb"]
    assert store.search("北京 fox", SearchFilter(kb_id="kb-missing"), 10) == []


@pytest.mark.parametrize(
    "hostile",
    ['hr" OR 1==1', "kb:* OR", "*", 'wiki\\" OR source:*', "\\", "'", '"', "wiki OR manual"],
)
def test_hostile_filter_values_are_literal_and_match_nothing_else(
    tmp_path: Path, hostile: str
) -> None:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.upsert(
        [
            IndexRecord("plain", "d1", "kb", "alpha report", source="wiki"),
            IndexRecord("literal", "d2", "kb", "alpha report", source=hostile),
        ]
    )
    by_source = SearchFilter(kb_id="kb", sources=frozenset({hostile}))
    assert ids(bm25.search("alpha", by_source, 10)) == ["literal"]
    for field in ("tenant_ids", "dataset_ids", "visibilities", "document_ids"):
        search_filter = SearchFilter.model_validate({"kb_id": "kb", field: frozenset({hostile})})
        assert bm25.search("alpha", search_filter, 10) == []
    assert bm25.search("alpha", SearchFilter(kb_id=hostile), 10) == []
    bm25.close()


def test_query_syntax_in_user_text_is_just_text(store: TantivyBm25Store) -> None:
    hits = store.search('kb:* OR source:"wiki" AND fox^10 (', ALL, 10)
    assert "en-fox" in ids(hits)


def test_query_of_only_punctuation_returns_nothing(store: TantivyBm25Store) -> None:
    assert store.search("？！。，…… --- ***", ALL, 10) == []
    assert store.search("   ", ALL, 10) == []


def test_none_scope_value_never_matches_while_empty_string_does(tmp_path: Path) -> None:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.upsert(
        [
            IndexRecord("none", "d", "kb", "alpha"),
            IndexRecord("empty", "d", "kb", "alpha", tenant_id=""),
        ]
    )
    hits = bm25.search("alpha", SearchFilter(kb_id="kb", tenant_ids=frozenset({""})), 10)
    assert ids(hits) == ["empty"]
    sentinel = frozenset({"None", "null", "\x00"})
    assert bm25.search("alpha", SearchFilter(kb_id="kb", tenant_ids=sentinel), 10) == []
    bm25.close()


def test_upsert_replaces_and_last_occurrence_in_a_batch_wins(store: TantivyBm25Store) -> None:
    store.upsert([IndexRecord("en-fox", "doc-en", "kb", "a sleepy cat", "wiki")])
    assert store.search("fox", ALL, 10) == []
    assert ids(store.search("cat", ALL, 10)) == ["en-fox"]
    store.upsert(
        [
            IndexRecord("dup", "d", "kb", "first version"),
            IndexRecord("dup", "d", "kb", "second version"),
        ]
    )
    assert store.search("first", ALL, 10) == []
    assert ids(store.search("second", ALL, 10)) == ["dup"]
    assert store.count() == len(CORPUS) + 1


def test_delete_by_chunk_and_by_document(store: TantivyBm25Store) -> None:
    store.delete_chunks(["zh-phone", "missing"])
    assert store.search("手机", ALL, 10) == []
    store.delete_document("doc-en")
    assert store.search("fox", ALL, 10) == []
    assert {h.document_id for h in store.search("kubernetes 北京 fox", ALL, 10)} == {
        "doc-zh",
        "doc-mixed",
    }
    assert store.count() == len(CORPUS) - 3


def test_results_survive_restart(tmp_path: Path) -> None:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.upsert(CORPUS)
    bm25.delete_chunks(["en-fox"])
    before = bm25.search("kubernetes 北京 v2.1", ALL, 10)
    bm25.close()
    reopened = TantivyBm25Store(tmp_path)
    assert reopened.search("kubernetes 北京 v2.1", ALL, 10) == before
    assert reopened.count() == len(CORPUS) - 1
    reopened.upsert([IndexRecord("new", "d", "kb", "fresh text")])
    assert ids(reopened.search("fresh", ALL, 10)) == ["new"]
    reopened.close()


def test_writes_after_close_fail_clearly(tmp_path: Path) -> None:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.close()
    with pytest.raises(RuntimeError, match="closed"):
        bm25.upsert(CORPUS)


def test_a_second_store_on_the_same_directory_is_refused_with_a_clear_error(
    tmp_path: Path,
) -> None:
    first = TantivyBm25Store(tmp_path)
    try:
        with pytest.raises(IndexInUse, match="another ragsift process"):
            TantivyBm25Store(tmp_path)
    finally:
        first.close()
