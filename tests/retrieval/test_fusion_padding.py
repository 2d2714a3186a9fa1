"""Short BM25 lists normalised as if channel_k long (issue 34): closed forms, ranx style."""

import math

import pytest

from ragsift.retrieval.fusion import (
    Padding,
    fuse,
    padded_lists,
    rrf,
    weighted_fusion,
    zscore_fusion,
)
from retrieval.test_fusion import ranked

DENSE = ranked("dense:original", ("a", 3.0), ("b", 2.0), ("c", 1.0))
ONLY_MATCH = ranked("sparse:original", ("x", 5.0))
FLOORS = {"sparse": 0.0}


def test_a_single_bm25_hit_gets_the_z_of_one_hit_among_depth_minus_one_zeros() -> None:
    fused = {h.chunk_id: h.fusion_score for h in zscore_fusion(
        [DENSE, ONLY_MATCH], {"dense": 1.0, "sparse": 0.7}, depth=4, floors=FLOORS)}
    # sparse over [5, 0, 0, 0]: mean 1.25, std sqrt(4.6875): x -> sqrt(3), a miss -> -1/sqrt(3)
    # dense over [3, 2, 1]: mean 2, std sqrt(2/3): a -> sqrt(1.5), x misses -> -sqrt(1.5)
    assert fused["x"] == pytest.approx(0.7 * math.sqrt(3) - math.sqrt(1.5))
    assert fused["a"] == pytest.approx(math.sqrt(1.5) - 0.7 / math.sqrt(3))
    assert fused["c"] == pytest.approx(-math.sqrt(1.5) - 0.7 / math.sqrt(3))


def test_the_only_exact_match_outranks_the_dense_top_at_depth_100() -> None:
    dense = ranked("dense:original", *((f"d{i}", 0.9 - i * 0.001) for i in range(100)))
    fused = zscore_fusion([dense, ONLY_MATCH], {"dense": 1.0, "sparse": 0.7},
                          depth=100, floors=FLOORS)
    assert fused[0].chunk_id == "x"  # 0.7 * sqrt(99) = 6.96 over the dense top's ~1.7
    unpadded = zscore_fusion([dense, ONLY_MATCH], {"dense": 1.0, "sparse": 0.7})
    assert unpadded[0].chunk_id != "x"  # today: a fixed 0.7 * 1 sinks it


def test_a_list_as_long_as_the_depth_is_fused_as_before() -> None:
    sparse = ranked("sparse:original", ("c", 12.0), ("d", 9.0), ("a", 3.0))
    padded = zscore_fusion([DENSE, sparse], depth=3, floors=FLOORS)
    assert padded == zscore_fusion([DENSE, sparse])
    assert weighted_fusion([DENSE, sparse], depth=3, floors=FLOORS) == weighted_fusion(
        [DENSE, sparse])


def test_a_channel_without_a_floor_is_never_padded() -> None:
    short_dense = ranked("dense:original", ("a", 0.9), ("b", 0.5))
    assert zscore_fusion([short_dense, ONLY_MATCH], depth=100, floors={}) == zscore_fusion(
        [short_dense, ONLY_MATCH])


def test_min_max_takes_the_floor_as_the_minimum_of_a_short_list() -> None:
    sparse = ranked("sparse:original", ("x", 5.0), ("y", 3.0))
    fused = {h.chunk_id: h.fusion_score for h in weighted_fusion(
        [DENSE, sparse], {"dense": 1.0, "sparse": 1.0}, depth=10, floors=FLOORS)}
    assert fused["y"] == pytest.approx(3.0 / 5.0)  # 0 unpadded: the last hit of two
    assert fused["x"] == pytest.approx(1.0)
    assert fused["a"] == pytest.approx(1.0)


def test_rrf_fuses_ranks_and_ignores_padding() -> None:
    padding = Padding(100, FLOORS)
    assert fuse("rrf", [DENSE, ONLY_MATCH], padding=padding) == rrf([DENSE, ONLY_MATCH])


def test_padded_lists_names_the_short_lists_of_floored_channels() -> None:
    assert padded_lists([DENSE, ONLY_MATCH], Padding(3, FLOORS)) == {"sparse:original": 1}
    assert padded_lists([DENSE, ONLY_MATCH], Padding(1, FLOORS)) == {}
