import pytest

from ragsift.domain.results import ChannelHit, RankedList
from ragsift.retrieval.fusion import rrf, weighted_fusion


def ranked(name: str, *chunks: tuple[str, float]) -> RankedList:
    return RankedList(
        name=name,
        hits=tuple(ChannelHit(chunk_id=c, document_id=f"doc-{c}", score=s) for c, s in chunks),
    )


DENSE = ranked("dense:original", ("a", 0.9), ("b", 0.8), ("c", 0.7))
SPARSE = ranked("sparse:original", ("c", 12.0), ("d", 9.0), ("a", 3.0))


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    fused = {hit.chunk_id: hit.fusion_score for hit in rrf([DENSE, SPARSE], k=60)}
    assert fused["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 3))
    assert fused["c"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert fused["b"] == pytest.approx(1 / (60 + 2))
    assert fused["d"] == pytest.approx(1 / (60 + 2))


def test_rrf_breaks_ties_by_best_single_rank_then_chunk_id() -> None:
    order = [hit.chunk_id for hit in rrf([DENSE, SPARSE], k=60)]
    # a and c tie at 1/61 + 1/63 with best rank 1 each -> chunk id; b and d tie at 1/62
    assert order == ["a", "c", "b", "d"]


def test_rrf_records_sources_ranks_and_raw_scores() -> None:
    hit = next(h for h in rrf([DENSE, SPARSE]) if h.chunk_id == "a")
    assert hit.retrieval_sources == ("dense:original", "sparse:original")
    assert hit.ranks == {"dense:original": 1, "sparse:original": 3}
    assert hit.scores == {"dense:original": 0.9, "sparse:original": 3.0}
    assert hit.channel_rank("sparse") == 3
    assert hit.channel_score("dense") == 0.9
    assert hit.channel_rank("rewrite") is None


def test_rrf_applies_weights_by_list_name_or_channel() -> None:
    fused = rrf([DENSE, SPARSE], k=60, weights={"dense": 2.0, "sparse:original": 0.5})
    scores = {hit.chunk_id: hit.fusion_score for hit in fused}
    assert scores["a"] == pytest.approx(2.0 / 61 + 0.5 / 63)
    assert scores["d"] == pytest.approx(0.5 / 62)


def test_rrf_with_one_valid_list_keeps_the_raw_channel_score() -> None:
    fused = rrf([SPARSE, ranked("dense:original")])
    assert [(h.chunk_id, h.fusion_score) for h in fused] == [("c", 12.0), ("d", 9.0), ("a", 3.0)]
    assert fused[0].retrieval_sources == ("sparse:original",)


def test_rrf_deduplicates_a_chunk_repeated_within_one_list() -> None:
    noisy = ranked("dense:original", ("a", 0.9), ("a", 0.5), ("b", 0.4))
    fused = rrf([noisy, SPARSE], k=60)
    scores = {hit.chunk_id: hit.fusion_score for hit in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 63)
    assert len(fused) == 4


def test_rrf_of_nothing_is_empty_and_rejects_bad_k() -> None:
    assert rrf([]) == []
    assert rrf([ranked("dense:original")]) == []
    with pytest.raises(ValueError):
        rrf([DENSE], k=0)


def test_weighted_fusion_uses_min_max_normalised_scores() -> None:
    fused = {h.chunk_id: h.fusion_score for h in weighted_fusion([DENSE, SPARSE])}
    # dense: a=1, b=0.5, c=0 ; sparse: c=1, d=(9-3)/9, a=0
    assert fused["a"] == pytest.approx(1.0)
    assert fused["b"] == pytest.approx(0.5)
    assert fused["c"] == pytest.approx(1.0)
    assert fused["d"] == pytest.approx(6 / 9)


def test_weighted_fusion_gives_equal_scores_full_credit() -> None:
    flat = ranked("dense:original", ("x", 0.3), ("y", 0.3))
    fused = {h.chunk_id: h.fusion_score for h in weighted_fusion([flat, SPARSE], {"dense": 0.5})}
    assert fused["x"] == pytest.approx(0.5)
