from pathlib import Path

import pytest

from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

KB = SearchFilter(kb_id="kb")
TEXTS = ["gastritis walnut diet", "enteritis walnut diet", "walnut walnut snack", "rabies vaccine"]


@pytest.fixture()
def store(tmp_path: Path) -> TantivyBm25Store:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.upsert([IndexRecord(f"c{i}", f"d{i}", "kb", text) for i, text in enumerate(TEXTS)])
    return bm25


def test_unit_weights_score_exactly_like_the_plain_query(store: TantivyBm25Store) -> None:
    plain = store.search("gastritis walnut", KB, 10)
    _, analyze = store.analyzer("kb")  # terms are index terms: the kb analyzer's tokens
    weighted = store.search_weighted([(t, 1.0) for t in analyze("gastritis walnut")], KB, 10)
    assert weighted == plain and len(plain) == 3
    store.close()


def test_a_weight_scales_that_terms_bm25_contribution(store: TantivyBm25Store) -> None:
    alone = {h.chunk_id: h.score for h in store.search("rabies", KB, 10)}
    doubled = {h.chunk_id: h.score for h in store.search_weighted([("rabi", 2.0)], KB, 10)}
    assert doubled.keys() == alone.keys() == {"c3"}  # "rabi": the stem of rabies
    assert doubled["c3"] == pytest.approx(2 * alone["c3"], rel=1e-5)
    store.close()


def test_terms_are_not_parsed_and_bad_weights_are_dropped(store: TantivyBm25Store) -> None:
    assert store.search_weighted([("walnut OR rabies", 1.0), ("*", 3.0)], KB, 10) == []
    assert store.search_weighted([("rabi", float("nan")), ("vaccin", -1.0)], KB, 10) == []
    hits = store.search_weighted([("walnut", 0.5), ("walnut", 0.5), ("rabi", 0.0)], KB, 10)
    assert {h.chunk_id for h in hits} == {"c0", "c1", "c2"}  # repeated terms add up
    store.close()


def test_term_stats_give_document_frequencies(store: TantivyBm25Store) -> None:
    assert store.term_stats("kb", ["walnut", "rabi", "absent"]) == (
        4, {"walnut": 3, "rabi": 1, "absent": 0})
    assert store.term_stats("other", ["walnut"]) == (0, {"walnut": 0})
    store.close()


def test_an_rm3_expanded_query_reaches_documents_that_share_only_feedback_terms(
    tmp_path: Path,
) -> None:
    from ragsift.retrieval.feedback import Rm3Config, expand_bm25_query

    bm25 = TantivyBm25Store(tmp_path)
    texts = {"c0": "胃炎 饮食 禁忌", "c1": "胃炎 核桃", "c2": "饮食 禁忌 清淡", "c3": "感冒 发烧"}
    bm25.upsert([IndexRecord(k, k, "kb", v) for k, v in texts.items()])
    first = bm25.search("胃炎", KB, 10)
    assert {h.chunk_id for h in first} == {"c0", "c1"}
    _, analyze = bm25.analyzer("kb")
    terms = expand_bm25_query("胃炎", analyze, [(texts[h.chunk_id], h.score) for h in first],
                              lambda ts: bm25.term_stats("kb", ts),
                              Rm3Config(feedback_docs=2, terms=12, weight=0.5))
    second = bm25.search_weighted(terms, KB, 10)
    # c2 shares no query term, only the feedback's 饮食 / 禁忌 (and their characters)
    assert "c2" in {h.chunk_id for h in second} and "c3" not in {h.chunk_id for h in second}
    bm25.close()
