import math

import pytest

from ragsift.evaluation.bootstrap_ci import paired_bootstrap, paired_by_query


def test_constant_difference_gives_a_zero_width_interval_at_that_difference() -> None:
    result = paired_bootstrap([0.1, 0.5, 0.9], [0.3, 0.7, 1.1])
    assert result.mean == pytest.approx(0.2)
    assert result.low == pytest.approx(0.2) and result.high == pytest.approx(0.2)
    assert result.significant and result.better == 3 and result.worse == 0


def test_interval_matches_the_normal_approximation_of_the_mean_difference() -> None:
    # differences +1 and -1, 200 each: mean 0, standard error 1/sqrt(400) = 0.05
    diffs = [1.0, -1.0] * 200
    result = paired_bootstrap([0.0] * 400, diffs)
    assert result.mean == 0.0
    assert result.low == pytest.approx(-1.96 * 0.05, abs=0.012)
    assert result.high == pytest.approx(1.96 * 0.05, abs=0.012)
    assert not result.significant


def test_same_seed_gives_the_same_interval() -> None:
    a, b = [0.0, 0.2, 0.4, 0.1], [0.1, 0.1, 0.6, 0.4]
    assert paired_bootstrap(a, b) == paired_bootstrap(a, b)


def test_pairs_by_query_id_and_ignores_unpaired_queries() -> None:
    result = paired_by_query({"q1": 0.0, "q2": 1.0, "q3": 0.5}, {"q2": 1.0, "q1": 0.5})
    assert result.queries == 2 and math.isclose(result.mean, 0.25)


def test_rejects_unequal_lengths_and_empty_input() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap([0.1], [0.1, 0.2])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
