"""The exact-match lane's rules (issue 34): which terms are rare and specific, and the order."""

import asyncio

from ragsift.domain.filters import SearchFilter
from ragsift.retrieval.exact_match import ExactMatchStage, promote, rare_terms, specific
from ragsift.retrieval.fusion import zscore_fusion
from retrieval.test_fusion import ranked

FUSED = zscore_fusion([
    ranked("dense:original", ("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)),
    ranked("sparse:original", ("b", 4.0), ("d", 2.0)),
])


def test_codes_numbers_long_words_and_chinese_names_are_specific() -> None:
    for term in ("e-1042", "inc0012345", "v2.14.3", "202311050047", "okonkwo", "张建国"):
        assert specific(term), term
    # a short word or a two-character Chinese token (often a bigram across words) is not
    for term in ("rna", "么还", "的"):
        assert not specific(term), term


def test_rare_terms_keep_document_frequencies_from_one_to_max_df() -> None:
    doc_freq = {"e-1042": 1, "错误码": 40, "okonkwo": 3, "zqxmissing": 0, "rosalind": 4}
    tokens = ["错误码", "e-1042", "e-1042", "okonkwo", "zqxmissing", "rosalind"]
    assert rare_terms(tokens, doc_freq, 3) == ["e-1042", "okonkwo"]
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
