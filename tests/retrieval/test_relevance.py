"""The calibrated relevance: logistic in the fused score, per fusion method, in 0..1."""

from __future__ import annotations

import pytest

from ragsift.retrieval.relevance import CALIBRATIONS, logistic, relevance


@pytest.mark.parametrize("fusion", sorted(CALIBRATIONS))
def test_relevance_rises_with_the_fused_score_and_stays_in_0_1(fusion: str) -> None:
    scores = [-50.0, -2.0, 0.0, 0.01, 0.03, 0.5, 1.0, 5.0, 8.2, 1e6]
    values = [relevance(score, fusion) for score in scores]

    assert values == sorted(values)
    assert all(0.0 <= value <= 1.0 for value in values)
    assert values[0] < 0.01 and values[-1] == 1.0


def test_each_fusion_method_has_its_own_scale() -> None:
    # a z-score sum of 8.2 stands out; an RRF sum near 1/61 is one first rank; 0.9 min-max
    assert relevance(8.2, "zscore") > 0.5 > relevance(2.0, "zscore")
    assert relevance(2 / 61, "rrf") > relevance(1 / 61, "rrf")
    assert relevance(0.9, "zscore") < relevance(0.9, "weighted") < relevance(1.9, "weighted")


def test_an_unknown_fusion_name_uses_the_zscore_calibration() -> None:
    assert relevance(6.0, "learned") == relevance(6.0, "zscore")


def test_logistic_does_not_overflow() -> None:
    assert logistic(-1e6) == 0.0 and logistic(1e6) == 1.0 and logistic(0.0) == 0.5
