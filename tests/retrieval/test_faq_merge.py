"""FAQ candidates over several variants (retrieval/faq_merge.py): each variant fused on its
own, then one candidate per faq_id with the higher score and every list that found it."""

from __future__ import annotations

from ragsift.domain.results import ChannelHit, RankedList
from ragsift.retrieval.faq_merge import best_dense, merge_variants


def _list(name: str, *hits: tuple[str, float]) -> RankedList:
    return RankedList(name=name, hits=tuple(
        ChannelHit(chunk_id=faq, document_id=faq, score=score) for faq, score in hits))


def test_an_entry_found_by_two_variants_keeps_the_higher_score_and_both_lists() -> None:
    lists = [
        _list("dense:original", ("a", 0.80), ("b", 0.79)),
        _list("sparse:original", ("a", 5.0)),
        _list("dense:expand1", ("b", 0.95), ("a", 0.70)),
        _list("sparse:expand1", ("b", 7.0)),
    ]

    merged = merge_variants("rrf", lists, k=60, weights={}, limit=10)

    assert sorted(hit.chunk_id for hit in merged) == ["a", "b"]
    by_id = {hit.chunk_id: hit for hit in merged}
    # each is first in both lists of one variant: the same best score, 2/61
    assert by_id["a"].fusion_score == by_id["b"].fusion_score == 2 / 61
    assert set(by_id["b"].ranks) == {"dense:original", "dense:expand1", "sparse:expand1"}
    assert best_dense(by_id["b"]) == 0.95 and best_dense(by_id["a"]) == 0.80


def test_merging_keeps_one_candidate_per_entry_up_to_the_limit() -> None:
    lists = [_list("dense:original", ("a", 0.9), ("b", 0.8), ("c", 0.7)),
             _list("dense:rewrite1", ("c", 0.9), ("a", 0.8))]

    merged = merge_variants("rrf", lists, k=60, weights={}, limit=2)

    # a and c score 0.9 in one variant each (a lone list keeps its scores); b is cut
    assert [(hit.chunk_id, hit.fusion_score) for hit in merged] == [("a", 0.9), ("c", 0.9)]


def test_a_follow_ups_contextual_variant_never_counts_for_a_direct_answer() -> None:
    lists = [_list("dense:original", ("a", 0.80)), _list("dense:contextual1", ("a", 0.97))]

    [hit] = merge_variants("rrf", lists, k=60, weights={}, limit=10)

    assert best_dense(hit) == 0.97 and best_dense(hit, direct_only=True) == 0.80
