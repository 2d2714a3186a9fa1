import pytest

from ragsift.domain.stages import RerankScore
from ragsift.retrieval.rerank import fitting_prefix, rerank_order, validate_scores


def scores(*pairs: tuple[int, float]) -> list[RerankScore]:
    return [RerankScore(index=i, score=s) for i, s in pairs]


def test_the_prefix_that_fits_the_token_budget_is_sent() -> None:
    # each pair costs query 10 + passage + margin 2
    assert fitting_prefix([20, 30, 40], query_tokens=10, budget=74, margin=2) == 2
    assert fitting_prefix([20, 30, 40], query_tokens=10, budget=73, margin=2) == 1
    assert fitting_prefix([20, 30, 40], query_tokens=10, budget=1000, margin=2) == 3
    assert fitting_prefix([500], query_tokens=10, budget=100, margin=2) == 0


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([], "no scores"),
        (scores((0, 1.0), (3, 0.5)), "outside 0..2"),
        (scores((1, 1.0), (1, 0.5)), "twice"),
        (scores((0, 1.0), (1, 0.5), (2, 0.1), (0, 0.2)), "4 scores for 3"),
        (scores((-1, 1.0)), "outside"),
        (scores((0, 0.2), (1, float("inf"))), r"non-finite score \(inf\) for passage 1"),
        (scores((0, float("-inf"))), r"non-finite score \(-inf\)"),
        (scores((2, float("nan")), (0, 0.4)), r"non-finite score \(nan\) for passage 2"),
    ],
)
def test_invalid_rerank_answers_are_rejected(bad: list[RerankScore], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_scores(bad, asked=3)


def test_rerank_order_puts_scored_first_and_keeps_fusion_order_for_the_rest() -> None:
    order = rerank_order(5, scores((2, 0.9), (0, 0.1), (1, 0.9)))
    assert order == [(1, 0.9), (2, 0.9), (0, 0.1), (3, None), (4, None)]
