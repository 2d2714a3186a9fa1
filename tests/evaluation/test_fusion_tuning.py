import math

import pytest

from ragsift.domain.results import ChannelHit, RankedList
from ragsift.evaluation.fusion_tuning import (
    FusionConfig,
    cross_validate,
    fused_documents,
    grid,
    score,
)


def ranked(name: str, *docs: str) -> RankedList:
    return RankedList(
        name=name,
        hits=tuple(ChannelHit(chunk_id=f"c-{d}", document_id=d, score=1.0 - i / 10)
                   for i, d in enumerate(docs)),
    )


CORPUS = {d: f"corpus-{d}" for d in "abcdefgh"}
LISTS = {
    "q1": (ranked("dense:original", "a", "b", "c"), ranked("sparse:original", "c", "d")),
    "q2": (ranked("dense:original", "e", "f"), ranked("sparse:original", "f", "g", "h")),
}
QRELS = {"q1": {"corpus-c": 1}, "q2": {"corpus-f": 1}}


def test_widths_cut_each_channel_before_fusion() -> None:
    narrow = FusionConfig("rrf", dense_k=1, sparse_k=1)
    assert fused_documents(LISTS["q1"], narrow, CORPUS) == ["corpus-a", "corpus-c"]


def test_sparse_weight_changes_the_rrf_order_by_closed_form() -> None:
    # c: 1/63 (dense rank 3) + w/61 (sparse rank 1); a: 1/61 -> c wins iff w > 1 - 61/63
    assert fused_documents(LISTS["q1"], FusionConfig("rrf", 1.0, 0.031), CORPUS)[0] == "corpus-a"
    assert fused_documents(LISTS["q1"], FusionConfig("rrf", 1.0, 0.032), CORPUS)[0] == "corpus-c"


def test_score_is_the_mean_over_queries() -> None:
    dense = score(LISTS, QRELS, CORPUS, FusionConfig("dense"), ks=(1,))
    assert dense["precision@1"] == 0.0
    sparse = score(LISTS, QRELS, CORPUS, FusionConfig("sparse"), ks=(1,))
    assert sparse["precision@1"] == pytest.approx(1.0)


def test_cross_validation_scores_the_choice_on_held_out_queries() -> None:
    configs = [FusionConfig("dense"), FusionConfig("sparse")]
    cv = cross_validate(LISTS, QRELS, CORPUS, configs, FusionConfig("dense"), folds=2)
    assert cv.folds == 2 and len(cv.held_out) == 2
    # sparse ranks every relevant document first; dense has them at ranks 3 and 2
    assert sorted(cv.held_out) == [1.0, 1.0]
    assert sorted(cv.baseline) == pytest.approx([1 / math.log2(4), 1 / math.log2(3)])
    assert cv.gain == pytest.approx(1 - (1 / math.log2(4) + 1 / math.log2(3)) / 2)


def test_the_grid_holds_both_single_channels_and_each_fusion() -> None:
    configs = grid(sparse_weights=(0.5,), widths=(10,), rrf_ks=(60,))
    assert [c.method for c in configs] == ["dense", "sparse", "rrf", "weighted", "zscore"]
