"""The exact-match lane's rules (issue 34): which terms are rare and specific, and the order."""

import asyncio

from ragsift.domain.filters import SearchFilter
from ragsift.retrieval.exact_match import (
    ExactMatchStage,
    Lookup,
    effective_max_df,
    promote,
    rare_terms,
    specific,
)
from ragsift.retrieval.fusion import zscore_fusion
from retrieval.test_fusion import ranked

FUSED = zscore_fusion([
    ranked("dense:original", ("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)),
    ranked("sparse:original", ("b", 4.0), ("d", 2.0)),
])


def test_codes_and_numbers_are_specific_and_latin_names_only_with_words_on() -> None:
    for term in ("e-1042", "inc0012345", "v2.14.3", "202311050047", "v2版"):
        assert specific(term), term
    # a Latin word counts only when asked for: on English prose rare words mislead
    assert not specific("okonkwo") and specific("okonkwo", words=True)
    # a short word, or a Chinese word (rare ones are often everyday words: 公积金) is not
    for term in ("rna", "公积金", "张建国", "的"):
        assert not specific(term, words=True), term


def test_rare_terms_keep_document_frequencies_from_one_to_max_df() -> None:
    doc_freq = {"e-1042": 1, "错误码": 40, "okonkwo": 3, "zqxmissing": 0, "rosalind": 4}
    tokens = ["错误码", "e-1042", "e-1042", "okonkwo", "zqxmissing", "rosalind"]
    assert rare_terms(tokens, doc_freq, 3, words=True) == ["e-1042", "okonkwo"]
    assert rare_terms(tokens, doc_freq, 3) == ["e-1042"]
    assert rare_terms(tokens, doc_freq, 0) == []


def test_holders_of_more_rare_terms_come_first_then_fused_order() -> None:
    order = [hit.chunk_id for hit in FUSED]
    moved = [hit.chunk_id for hit in promote(FUSED, {"d": 1, "c": 2})]
    assert moved == ["c", "d", *[c for c in order if c not in ("c", "d")]]
    assert promote(FUSED, {}) == FUSED


def test_an_index_without_term_statistics_skips_the_lane_and_says_so() -> None:
    # the Milvus index has BM25 but no per-term document frequencies
    stage = ExactMatchStage(object(), max_df=3)
    outcome = asyncio.run(stage.run("E-1042", SearchFilter(kb_id="k"), FUSED, "hybrid"))
    assert outcome.fused == FUSED
    assert outcome.trace.status == "skipped"
    assert "term statistics" in (outcome.trace.reason or "")


def test_max_df_zero_turns_the_lane_off() -> None:
    outcome = asyncio.run(ExactMatchStage(object(), max_df=0).run(
        "E-1042", SearchFilter(kb_id="k"), FUSED, "hybrid"))
    assert outcome.trace.status == "off"


def test_in_a_small_kb_only_a_term_one_chunk_holds_is_rare() -> None:
    assert effective_max_df(3, 20) == 1
    assert effective_max_df(3, 250) == 2
    assert effective_max_df(3, 7000) == 3


def test_without_a_bm25_list_the_lane_stands_down_without_a_second_degradation() -> None:
    stage = ExactMatchStage(object(), max_df=3)
    found = Lookup(terms=("e-1042",), held={"d": 1})
    outcome = stage.apply(FUSED, found, bm25_answered=False)
    assert outcome.fused == FUSED and outcome.degradation is None
    assert outcome.trace.status == "skipped"
    assert stage.apply(FUSED, found).fused[0].chunk_id == "d"
