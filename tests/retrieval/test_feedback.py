import math

import numpy as np
import pytest

from ragsift.retrieval.feedback import (
    Rm3Config,
    RocchioConfig,
    feedback_weights,
    lucene_idf,
    rm3_query,
    rocchio,
)


def test_feedback_weights_follow_the_scores_and_sum_to_one() -> None:
    weights = feedback_weights([3.0, 2.0, 1.0])
    assert weights == pytest.approx([1.0 / 1.65, 0.55 / 1.65, 0.1 / 1.65])
    assert feedback_weights([2.0, 2.0]) == pytest.approx([0.5, 0.5])
    assert feedback_weights([]) == []


def test_rm3_adds_the_feedback_terms_by_probability_times_idf() -> None:
    idf = {"胃炎": 2.0, "核桃": 2.0, "饮食": 1.5, "的": 0.0, "禁忌": 3.0}.get
    feedback = [(["胃炎", "饮食", "的", "禁忌"], 0.5), (["胃炎", "饮食", "饮食", "的"], 0.5)]
    terms = dict(rm3_query(["胃炎", "核桃", "胃炎"], feedback, lambda t: idf(t, 0.0),
                           Rm3Config(terms=2, weight=0.5)))
    # P(w|R): 胃炎 .25, 饮食 .375, 禁忌 .125, 的 .25; x idf: 饮食 .5625, 胃炎 .5, 禁忌 .375
    budget = 0.5 * 2  # weight x distinct query terms
    assert terms == pytest.approx({
        "胃炎": 1.0 + budget * 0.25 / 0.625, "核桃": 1.0, "饮食": budget * 0.375 / 0.625})


def test_rm3_without_feedback_or_weight_keeps_the_query() -> None:
    assert rm3_query(["a", "b", "a"], [], lambda t: 1.0, Rm3Config()) == (("a", 1.0),
                                                                         ("b", 1.0))
    assert rm3_query(["a"], [(["c"], 1.0)], lambda t: 1.0, Rm3Config(weight=0)) == (
        ("a", 1.0),)
    # terms of no weight in the index (idf 0) are never added
    assert rm3_query(["a"], [(["c"], 1.0)], lambda t: 0.0, Rm3Config()) == (("a", 1.0),)


def test_rocchio_moves_the_query_towards_the_feedback_mean() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    feedback = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    moved = rocchio(query, feedback, RocchioConfig(feedback_docs=2, alpha=1.0, beta=1.0))
    assert moved == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])
    same = rocchio(query, feedback, RocchioConfig(beta=0.0))
    assert same == pytest.approx([1.0, 0.0])


def test_lucene_idf() -> None:
    assert lucene_idf(1, 10) == pytest.approx(math.log(1 + 9.5 / 1.5))


@pytest.mark.parametrize("bad", [{"feedback_docs": 0}, {"terms": 0}, {"weight": -1}])
def test_invalid_rm3_configuration_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Rm3Config(**bad)  # type: ignore[arg-type]


def test_invalid_rocchio_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        RocchioConfig(alpha=0)


def test_idf_from_stats_gives_zero_to_unlisted_and_absent_terms() -> None:
    from ragsift.retrieval.feedback import idf_from_stats

    idf = idf_from_stats(10, {"a": 1, "b": 0})
    assert idf("a") == pytest.approx(lucene_idf(1, 10))
    assert idf("b") == 0.0 and idf("c") == 0.0


def test_expand_bm25_query_uses_the_analyzer_and_the_stores_document_frequencies() -> None:
    from ragsift.retrieval.feedback import expand_bm25_query

    asked: list[list[str]] = []

    def stats(terms: list[str]) -> tuple[int, dict[str, int]]:
        asked.append(list(terms))
        return 100, {"walnut": 10, "diet": 50, "gastritis": 5}

    terms = dict(expand_bm25_query(
        "Gastritis", str.split, [("gastritis walnut", 2.0), ("walnut diet", 1.0),
                                 ("ignored", 0.5)],
        lambda ts: stats(list(ts)), Rm3Config(feedback_docs=2, terms=2, weight=1.0)))
    assert asked == [["diet", "gastritis", "walnut"]]
    # shares 1/1.1 and .1/1.1: P(gastritis) = .5/1.1, P(walnut) = .5, P(diet) = .05/1.1;
    # x idf (df 5, 10, 50 of 100) keeps gastritis and walnut, sharing weight 1 x 1 term
    mass = 0.5 / 1.1 + 0.5
    assert terms == pytest.approx({"Gastritis": 1.0, "gastritis": 0.5 / 1.1 / mass,
                                   "walnut": 0.5 / mass})


def test_settings_configure_rm3() -> None:
    from ragsift.config import Settings
    from ragsift.retrieval.feedback import rm3_config_from

    config = rm3_config_from(Settings(prf_rm3_docs=4, prf_rm3_terms=7, prf_rm3_weight=0.2))
    assert (config.feedback_docs, config.terms, config.weight) == (4, 7, 0.2)
