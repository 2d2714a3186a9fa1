import math
import random

import pytest

from ragsift.domain.results import ChannelHit, FusedHit, RankedList
from ragsift.retrieval.fusion import fuse, fused_count, rrf, weighted_fusion, zscore_fusion


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


def test_zscore_fusion_sums_weighted_z_scores_with_missing_as_the_lists_lowest() -> None:
    fused = {h.chunk_id: h.fusion_score
             for h in zscore_fusion([DENSE, SPARSE], {"dense": 1.0, "sparse": 0.7})}
    # dense 0.9/0.8/0.7: mean 0.8, population sd sqrt(0.02/3), so z = +sqrt(1.5), 0, -sqrt(1.5);
    # sparse 12/9/3: mean 8, sd sqrt(14), so z = 4, 1, -5 over sqrt(14). b is missing from
    # sparse and d from dense: each gets that list's lowest z.
    low_dense, root14 = -math.sqrt(1.5), math.sqrt(14)
    assert fused["a"] == pytest.approx(math.sqrt(1.5) + 0.7 * -5 / root14)
    assert fused["b"] == pytest.approx(0.0 + 0.7 * -5 / root14)
    assert fused["c"] == pytest.approx(low_dense + 0.7 * 4 / root14)
    assert fused["d"] == pytest.approx(low_dense + 0.7 * 1 / root14)
    assert [h.chunk_id for h in zscore_fusion([DENSE, SPARSE], {"sparse": 0.7})] == [
        "a", "c", "b", "d"]


def test_zscore_fusion_gives_a_flat_lists_hits_one_and_keeps_one_lists_raw_scores() -> None:
    flat = ranked("dense:original", ("x", 0.3), ("y", 0.3))
    fused = {h.chunk_id: h.fusion_score for h in zscore_fusion([flat, SPARSE])}
    assert fused["x"] == pytest.approx(1 - 5 / math.sqrt(14))  # 1 + sparse's lowest
    assert fused["c"] == pytest.approx(0 + 4 / math.sqrt(14))  # missed by the flat list
    single = ranked("sparse:original", ("b", 7.0))  # one hit: still lifts b over c
    order = [h.chunk_id for h in zscore_fusion([DENSE, single], {"sparse": 0.7})]
    assert order == ["a", "b", "c"]  # a: sqrt(1.5) > b: 0 + 0.7 > c: -sqrt(1.5)
    alone = zscore_fusion([DENSE, ranked("sparse:original")])
    assert [(h.chunk_id, h.fusion_score) for h in alone] == [("a", 0.9), ("b", 0.8), ("c", 0.7)]


def test_fuse_dispatches_by_name_and_rejects_unknown_methods() -> None:
    assert fuse("rrf", [DENSE, SPARSE], k=10) == rrf([DENSE, SPARSE], k=10)
    assert fuse("weighted", [DENSE, SPARSE]) == weighted_fusion([DENSE, SPARSE])
    assert fuse("zscore", [DENSE, SPARSE]) == zscore_fusion([DENSE, SPARSE])
    with pytest.raises(ValueError, match="unknown fusion 'borda'"):
        fuse("borda", [DENSE])


@pytest.mark.parametrize("method", ["rrf", "weighted", "zscore"])
def test_a_limit_keeps_the_head_of_the_full_fused_order(method: str) -> None:
    third = ranked("dense:rewrite", ("e", 0.95), ("b", 0.85), ("f", 0.2))
    lists = [DENSE, SPARSE, third]
    full = fuse(method, lists, weights={"sparse": 0.7})
    assert len(full) == fused_count(lists) == 6
    for limit in (0, 1, 3, 6, 10):
        assert fuse(method, lists, weights={"sparse": 0.7}, limit=limit) == full[:limit]
    assert fuse(method, [DENSE], limit=2) == fuse(method, [DENSE])[:2]  # one list: raw scores


def test_fused_hits_are_models_equal_to_validated_ones() -> None:
    for hit in zscore_fusion([DENSE, SPARSE], {"sparse": 0.7}):
        assert FusedHit.model_validate(hit.model_dump()) == hit
        assert hit.retrieval_sources == tuple(hit.ranks)
    twice = [DENSE, ranked("dense:original", ("b", 0.5))]  # two lists of one name
    assert rrf(twice)[0].retrieval_sources == ("dense:original",)


def test_a_channels_best_rank_comes_with_the_score_of_that_list() -> None:
    lists = [ranked("dense:original", ("x", 0.4), ("a", 0.9)),
             ranked("dense:rewrite", ("a", 0.7)), SPARSE]
    hit = next(h for h in rrf(lists) if h.chunk_id == "a")
    assert hit.channel_hit("dense") == (1, 0.7)  # rank 1 in the rewrite's list beats 2
    assert (hit.channel_rank("dense"), hit.channel_score("dense")) == (1, 0.7)
    assert hit.channel_hit("sparse") == (3, 3.0)
    assert hit.channel_hit("second_dense") is None


def _fsum_zscore(lists: list[RankedList], weights: dict[str, float]) -> dict[str, float]:
    """The z-score fusion as the module wrote it for any number of lists (math.fsum)."""
    per_list = []
    for ranked_list in lists:
        first: dict[str, float] = {}
        for hit in ranked_list.hits:
            first.setdefault(hit.chunk_id, hit.score)
        mean = math.fsum(first.values()) / len(first)
        spread = math.sqrt(math.fsum((v - mean) ** 2 for v in first.values()) / len(first))
        z = {chunk: (v - mean) / spread for chunk, v in first.items()}
        per_list.append((weights[ranked_list.channel], z, min(z.values())))
    chunks = {chunk for _, z, _ in per_list for chunk in z}
    return {chunk: math.fsum(w * z.get(chunk, low) for w, z, low in per_list)
            for chunk in chunks}


def test_two_lists_fuse_to_exactly_the_scores_of_the_fsum_form() -> None:
    # two floats' sum is rounded once, as fsum rounds: the two-list path may add them plainly
    rng = random.Random(5)
    for _ in range(200):
        pool = [f"c{i}" for i in range(60)]
        dense = ranked("dense:original", *((c, rng.uniform(0.6, 0.95))
                                           for c in rng.sample(pool, 30)))
        sparse = ranked("sparse:original", *((c, rng.uniform(0.0, 40.0))
                                             for c in rng.sample(pool, 30)))
        weights = {"dense": 1.0, "sparse": rng.choice([0.3, 0.7, 1.0 / 3])}
        got = {h.chunk_id: h.fusion_score for h in zscore_fusion([dense, sparse], weights)}
        assert got == _fsum_zscore([dense, sparse], weights)
