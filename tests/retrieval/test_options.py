"""Option precedence: the request, then the KB's tuned fusion when opted in, then settings."""

from __future__ import annotations

from datetime import UTC, datetime

from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.domain.tuning import TunedFusion
from ragsift.retrieval.options import resolve_options

TUNED = TunedFusion(
    kb_id="kb", fusion="weighted", dense_weight=1.0, sparse_weight=0.3, channel_k=50, rrf_k=20,
    metric="ndcg@10", queries=100, folds=5, baseline="rrf w=1/1 widths=30/30 k=60",
    baseline_score=0.8, tuned_score=0.83, cv_gain=0.02, cv_gain_spread=0.004,
    tuned_at=datetime(2026, 11, 30, tzinfo=UTC),
)


def request(**values: object) -> SearchRequest:
    return SearchRequest(query="q", kb_id="kb", **values)  # type: ignore[arg-type]


def test_tuned_fusion_is_ignored_unless_the_request_or_settings_opt_in() -> None:
    options = resolve_options(request(), Settings(), TUNED)
    assert (options.fusion, options.weights, options.channel_k) == (
        "zscore", {"dense": 1.0, "sparse": 0.7}, 100)
    assert options.tuned_fusion.status == "off"


def test_an_opted_in_request_takes_every_tuned_value() -> None:
    options = resolve_options(request(tuned_fusion=True), Settings(), TUNED)
    assert (options.fusion, options.weights, options.channel_k, options.rrf_k) == (
        "weighted", {"dense": 1.0, "sparse": 0.3}, 50, 20)
    assert options.tuned_fusion.status == "applied"
    assert options.tuned_fusion.reason == "weighted w=1/0.3 channel_k=50"
    assert options.tuned_fusion.detail["cv_gain"] == 0.02


def test_settings_opt_in_and_a_request_can_opt_out() -> None:
    settings = Settings(use_tuned_fusion=True)
    assert resolve_options(request(), settings, TUNED).fusion == "weighted"
    opted_out = resolve_options(request(tuned_fusion=False), settings, TUNED)
    assert opted_out.fusion == "zscore" and opted_out.tuned_fusion.status == "off"


def test_explicit_request_values_win_over_the_tuned_ones() -> None:
    options = resolve_options(
        request(tuned_fusion=True, fusion="rrf", sparse_weight=2.0, channel_k=10), Settings(),
        TUNED,
    )
    assert options.fusion == "rrf"
    assert options.weights == {"dense": 1.0, "sparse": 2.0}
    assert options.channel_k == 30  # grows to cover candidate_k (30)
    assert options.rrf_k == 20  # not given by the request: the tuned value


def test_opting_in_on_a_kb_never_tuned_keeps_settings_and_says_why() -> None:
    options = resolve_options(request(tuned_fusion=True), Settings(), None)
    assert options.fusion == "zscore"
    assert options.tuned_fusion.status == "skipped"
    assert options.tuned_fusion.reason == "this knowledge base was never tuned"
