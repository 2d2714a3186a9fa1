"""Closed-form checks of the ranking metrics, and parity with trec_eval through pytrec_eval."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence

import pytest
import pytrec_eval

from ragsift.evaluation.metrics import (
    evaluate_run,
    mean_metrics,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)

KS = (1, 3, 5, 10, 100)
Metric = Callable[[Sequence[str], Mapping[str, int], int], float]


def test_ndcg_closed_form() -> None:
    ranked = ["d1", "x", "d2"]
    relevant = {"d1": 1, "d2": 2, "z": 0}
    expected = (1 / math.log2(2) + 2 / math.log2(4)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at_k(ranked, relevant, 3) == pytest.approx(expected, abs=1e-12)
    assert ndcg_at_k(ranked, relevant, 1) == pytest.approx(1 / 2, abs=1e-12)


def test_ndcg_ideal_uses_unretrieved_relevant_docs() -> None:
    assert ndcg_at_k(["a"], {"a": 1, "b": 3}, 1) == pytest.approx(1 / 3, abs=1e-12)
    assert ndcg_at_k(["a"], {"a": 1, "b": 3}, 5) == pytest.approx(
        (1 / math.log2(2)) / (3 / math.log2(2) + 1 / math.log2(3)), abs=1e-12
    )


def test_precision_divides_by_k_even_for_a_short_run() -> None:
    assert precision_at_k(["a"], {"a": 1}, 5) == pytest.approx(1 / 5)
    assert precision_at_k([], {"a": 1}, 3) == 0.0
    assert precision_at_k(["a", "b", "c"], {"a": 1, "c": 2}, 3) == pytest.approx(2 / 3)


def test_recall_and_mrr_closed_form() -> None:
    relevant = {"a": 1, "b": 2, "c": 0, "d": 3}
    ranked = ["x", "c", "b", "y", "a"]
    assert recall_at_k(ranked, relevant, 3) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, relevant, 5) == pytest.approx(2 / 3)
    assert mrr_at_k(ranked, relevant, 3) == pytest.approx(1 / 3)
    assert mrr_at_k(ranked, relevant, 2) == 0.0


def test_query_without_relevant_docs_scores_zero() -> None:
    for metric in (precision_at_k, recall_at_k, mrr_at_k, ndcg_at_k):
        assert metric(["a", "b"], {"a": 0, "b": -1}, 2) == 0.0
        assert metric(["a", "b"], {}, 2) == 0.0


def test_grades_at_or_below_zero_are_not_relevant() -> None:
    relevant = {"n": -1, "z": 0, "a": 1}
    assert precision_at_k(["n", "z", "a"], relevant, 2) == 0.0
    assert ndcg_at_k(["n", "z", "a"], relevant, 3) == pytest.approx(1 / math.log2(4))


def test_duplicates_count_once_at_first_occurrence() -> None:
    relevant = {"b": 1, "a": 2}
    ranked = ["a", "a", "b", "a"]
    assert precision_at_k(ranked, relevant, 2) == 1.0
    assert recall_at_k(ranked, relevant, 2) == 1.0
    assert mrr_at_k(["x", "x", "b"], relevant, 2) == pytest.approx(1 / 2)
    assert ndcg_at_k(ranked, relevant, 2) == pytest.approx(1.0)


def test_ties_in_our_input_keep_input_order() -> None:
    # Our functions never re-sort: equal-scored docs stay in the order given.
    relevant = {"a": 1}
    assert mrr_at_k(["a", "b"], relevant, 10) == 1.0
    assert mrr_at_k(["b", "a"], relevant, 10) == 0.5
    # trec_eval re-sorts by score and breaks ties by doc id descending: "b" goes first.
    tied = pytrec_eval.RelevanceEvaluator({"q": relevant}, {"recip_rank"}).evaluate(
        {"q": {"a": 1.0, "b": 1.0}}
    )
    assert tied["q"]["recip_rank"] == 0.5


@pytest.mark.parametrize("metric", [precision_at_k, recall_at_k, mrr_at_k, ndcg_at_k])
def test_k_must_be_positive(metric: Metric) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        metric(["a"], {"a": 1}, 0)


def _random_data(
    seed: int = 20240607, n_queries: int = 200
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """Seeded run/qrels with every awkward case the parity test must cover."""
    rng = random.Random(seed)
    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        pool = [f"d{q}_{i}" for i in range(rng.randint(1, 160))]
        judged = rng.sample(pool, rng.randint(1, len(pool)))
        kind = rng.random()
        if kind < 0.1:  # judged, but no relevant doc
            qrels[qid] = {d: rng.choice((0, 0, -1)) for d in judged}
        else:
            qrels[qid] = {d: rng.choice((-1, 0, 0, 1, 1, 2, 3)) for d in judged}
        ranked = rng.sample(pool, rng.randint(0, len(pool)))  # often shorter than k
        if 0.1 <= kind < 0.2:  # a run that retrieves no relevant doc
            ranked = [d for d in ranked if qrels[qid].get(d, 0) <= 0]
        if ranked and rng.random() < 0.15:  # duplicates: only the first occurrence counts
            for _ in range(rng.randint(1, 5)):
                ranked.insert(rng.randrange(len(ranked) + 1), rng.choice(ranked))
        run[qid] = ranked
    return run, qrels


def _as_trec(ranked: Sequence[str], k: int | None = None) -> dict[str, float]:
    """Strictly decreasing scores (1000 - rank) so trec_eval's re-sort keeps our order."""
    first = list(dict.fromkeys(ranked))[:k]
    return {doc_id: float(1000 - rank) for rank, doc_id in enumerate(first, start=1)}


def _trec(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, float]]:
    """pytrec_eval's scores as {query: {"<metric>@<k>": value}}, MRR@k from the run cut at k."""
    cutoffs = ",".join(map(str, KS))
    measures = {f"P.{cutoffs}", f"recall.{cutoffs}", f"ndcg_cut.{cutoffs}"}
    main = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(
        {q: _as_trec(r) for q, r in run.items()}
    )
    out: dict[str, dict[str, float]] = {q: {} for q in main}
    for k in KS:
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(
            {q: _as_trec(r, k) for q, r in run.items()}
        )
        for q in main:
            out[q][f"precision@{k}"] = main[q][f"P_{k}"]
            out[q][f"recall@{k}"] = main[q][f"recall_{k}"]
            out[q][f"ndcg@{k}"] = main[q][f"ndcg_cut_{k}"]
            out[q][f"mrr@{k}"] = rr[q]["recip_rank"]
    return out


def test_random_data_covers_the_awkward_cases() -> None:
    run, qrels = _random_data()
    no_rel = {q for q, rel in qrels.items() if all(g <= 0 for g in rel.values())}
    assert len(run) == len(qrels) == 200
    assert no_rel
    assert any(len(set(r)) < 100 for r in run.values())
    assert any(len(set(r)) > 100 for r in run.values())
    assert any(not r for r in run.values())
    assert any(len(set(r)) < len(r) for r in run.values())
    assert any(
        q not in no_rel and r and all(qrels[q].get(d, 0) <= 0 for d in r) for q, r in run.items()
    )
    assert any(g == 0 for rel in qrels.values() for g in rel.values())
    assert any(g < 0 for rel in qrels.values() for g in rel.values())


def test_parity_with_trec_eval_per_query() -> None:
    run, qrels = _random_data()
    expected = _trec(run, qrels)
    assert set(expected) == set(qrels)  # pytrec_eval scores judged no-relevant queries too
    functions: dict[str, Metric] = {
        "precision": precision_at_k,
        "recall": recall_at_k,
        "mrr": mrr_at_k,
        "ndcg": ndcg_at_k,
    }
    for q, ranked in run.items():
        for name, metric in functions.items():
            for k in KS:
                got = metric(ranked, qrels[q], k)
                assert got == pytest.approx(expected[q][f"{name}@{k}"], abs=1e-9), (q, name, k)


def test_evaluate_run_and_mean_match_trec_eval_on_scored_queries() -> None:
    run, qrels = _random_data(seed=7)
    expected = _trec(run, qrels)
    per_query = evaluate_run(run, qrels, KS)
    scored = {q for q, rel in qrels.items() if any(g > 0 for g in rel.values())}
    assert set(per_query) == scored
    for q, metrics in per_query.items():
        assert metrics == pytest.approx(expected[q], abs=1e-9)
    means = mean_metrics(per_query)
    assert means == pytest.approx(
        {m: sum(expected[q][m] for q in scored) / len(scored) for m in expected["q0"]}, abs=1e-9
    )


def test_evaluate_run_skipping_rules() -> None:
    qrels = {
        "hit": {"a": 2, "b": 0},
        "unjudged_relevant": {"a": 0, "b": -1},  # judged, no relevant doc: skipped
        "missing": {"c": 1},  # no run entry: all zeros
    }
    run = {"hit": ["b", "a"], "unjudged_relevant": ["a"], "not_in_qrels": ["a"]}
    per_query = evaluate_run(run, qrels, ks=(1, 2))
    assert list(per_query) == ["hit", "missing"]
    assert list(per_query["hit"]) == [
        f"{m}@{k}" for m in ("precision", "recall", "mrr", "ndcg") for k in (1, 2)
    ]
    assert per_query["missing"] == dict.fromkeys(per_query["hit"], 0.0)
    assert per_query["hit"]["mrr@2"] == 0.5
    assert per_query["hit"]["precision@2"] == 0.5
    assert per_query["hit"]["ndcg@1"] == 0.0
    assert per_query["hit"]["ndcg@2"] == pytest.approx(2 / math.log2(3) / 2)
    means = mean_metrics(per_query)
    assert means["mrr@2"] == 0.25
    assert means["recall@2"] == 0.5


def test_evaluate_run_default_ks_and_mean_of_nothing() -> None:
    per_query = evaluate_run({"q": ["a"]}, {"q": {"a": 1}})
    assert set(per_query["q"]) == {
        f"{m}@{k}" for m in ("precision", "recall", "mrr", "ndcg") for k in KS
    }
    assert mean_metrics({}) == {}
    assert evaluate_run({"q": ["a"]}, {}) == {}
