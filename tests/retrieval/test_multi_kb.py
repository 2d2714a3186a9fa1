"""The merge of several KBs' channel lists (retrieval/multi_kb.py), closed-form cases."""

from __future__ import annotations

import pytest

from ragsift.domain.errors import EmbeddingModelMismatch, InvalidInput, NotFound
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.domain.trace import StageTrace
from ragsift.retrieval.exact_match import Lookup
from ragsift.retrieval.fusion import rrf
from ragsift.retrieval.multi_kb import (
    check_models,
    hit_kbs,
    merge_kb_lists,
    merge_lookups,
    merged_timings,
    unique_kbs,
)


def ranked(name: str, *hits: tuple[str, float]) -> RankedList:
    return RankedList(name=name, hits=tuple(
        ChannelHit(chunk_id=chunk, document_id=f"d-{chunk}", score=score) for chunk, score in hits))


def names(ranked_list: RankedList) -> list[str]:
    return [hit.chunk_id for hit in ranked_list.hits]


def kb(name: str, model: str = "e5") -> KnowledgeBase:
    return KnowledgeBase(id=f"id-{name}", name=name, embedding_model=model, embedding_dim=4)


def test_one_kb_lists_come_back_unchanged() -> None:
    lists = (ranked("dense:original", ("a", 0.9), ("b", 0.5)),)

    assert merge_kb_lists([lists], depth=1) == lists


def test_dense_lists_merge_by_cosine_and_bm25_by_raw_score_cut_to_depth() -> None:
    kb1 = (ranked("dense:original", ("a1", 0.80), ("a2", 0.70)),
           ranked("sparse:original", ("a1", 3.0), ("a2", 1.0)))
    kb2 = (ranked("dense:original", ("b1", 0.75), ("b2", 0.60)),
           ranked("sparse:original", ("b1", 9.0)))

    dense, sparse = merge_kb_lists([kb1, kb2], depth=3)

    assert (dense.name, names(dense)) == ("dense:original", ["a1", "b1", "a2"])
    assert (sparse.name, names(sparse)) == ("sparse:original", ["b1", "a1", "a2"])
    assert [hit.score for hit in sparse.hits] == [9.0, 3.0, 1.0]  # BM25 scores kept


def test_zscore_merge_lifts_each_kbs_best_bm25_hit_alike() -> None:
    # KB1's best match is weak (1.2 of 1.0-1.2) and KB2's strong (9 of 1-9): raw keeps them
    # apart, z-scores put both at +1
    kb1 = (ranked("sparse:original", ("a1", 1.2), ("a2", 1.0)),)
    kb2 = (ranked("sparse:original", ("b1", 9.0), ("b2", 1.0)),)

    (raw,) = merge_kb_lists([kb1, kb2], depth=4)
    (z,) = merge_kb_lists([kb1, kb2], depth=4, sparse="zscore")

    assert names(raw) == ["b1", "a1", "a2", "b2"]
    assert sorted(hit.score for hit in z.hits) == pytest.approx([-1.0, -1.0, 1.0, 1.0])


def test_a_kb_with_the_answer_wins_fusion_where_separate_lists_would_tie_it() -> None:
    # KB2 holds the answer (best cosine and BM25); KB1 only weak matches
    kb1 = (ranked("dense:original", ("a1", 0.71)), ranked("sparse:original", ("a1", 1.5)))
    kb2 = (ranked("dense:original", ("b1", 0.86)), ranked("sparse:original", ("b1", 8.0)))

    merged = rrf(merge_kb_lists([kb1, kb2], depth=10))
    separate = rrf([*kb1, *kb2])

    assert [hit.chunk_id for hit in merged] == ["b1", "a1"]
    assert merged[0].fusion_score > merged[1].fusion_score
    assert separate[0].fusion_score == separate[1].fusion_score  # why lists are merged first


def test_hit_kbs_names_the_kb_of_each_chunk() -> None:
    per_kb = [("kb1", (ranked("dense:original", ("a", 0.5)),)),
              ("kb2", (ranked("sparse:original", ("b", 2.0)),))]

    assert hit_kbs(per_kb) == {"a": "kb1", "b": "kb2"}


def test_unique_kbs_deduplicates_and_bounds_the_count() -> None:
    assert unique_kbs(["x", "y", "x"], limit=2) == ("x", "y")
    with pytest.raises(InvalidInput, match="at most 2 knowledge bases"):
        unique_kbs(["x", "y", "z"], limit=2)
    with pytest.raises(InvalidInput, match="at least one"):
        unique_kbs([], limit=2)


def test_kbs_of_different_embedding_models_are_refused_unless_sparse() -> None:
    kbs = [kb("handbook"), kb("policy", model="bge-m3")]
    ids = [k.id for k in kbs]

    with pytest.raises(InvalidInput, match="different embedding models") as refused:
        check_models(kbs, ids, "e5", sparse_only=False)
    assert not isinstance(refused.value, EmbeddingModelMismatch)  # a bad request: 400
    check_models(kbs, ids, "e5", sparse_only=True)
    with pytest.raises(EmbeddingModelMismatch):
        check_models([kb("a", "m2"), kb("b", "m2")], ["id-a", "id-b"], "e5", sparse_only=False)
    with pytest.raises(NotFound, match="'nope'"):
        check_models([kbs[0], None], [ids[0], "nope"], "e5", sparse_only=True)


def test_lookups_merge_terms_and_holders_and_keep_a_failure() -> None:
    one = Lookup(("e-104",), {"a": 1}, 2.0)
    two = Lookup(("v2",), {"b": 1}, 3.0)
    failed = Lookup(trace=StageTrace(status="failed", reason="boom"))

    merged = merge_lookups([one, two])

    assert (merged.terms, dict(merged.held), merged.latency_ms) == (
        ("e-104", "v2"), {"a": 1, "b": 1}, 3.0)
    assert merge_lookups([one, failed]) is failed


def test_timings_of_kbs_searched_side_by_side_take_the_longest() -> None:
    assert merged_timings([{"scope": 1.0, "channels": 5.0}, {"scope": 2.0}]) == {
        "scope": 2.0, "channels": 5.0}
