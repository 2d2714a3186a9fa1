"""The fusion an evaluation ran with is stated: tuned, default or named, and why."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ragsift.config import Settings
from ragsift.domain.tuning import TunedFusion
from ragsift.evaluation.fusion_statement import headline_config, state_fusion
from ragsift.evaluation.runner import TUNED, configs_for

TUNED_FIT = TunedFusion(
    kb_id="kb", fusion="zscore", dense_weight=1.0, sparse_weight=0.5, channel_k=50, rrf_k=60,
    metric="ndcg@10", queries=40, folds=5, baseline="zscore w=1/0.7 widths=100/100",
    baseline_score=0.5, tuned_score=0.56, cv_gain=0.031, cv_gain_spread=0.01,
    tuned_at=datetime(2026, 12, 1, tzinfo=UTC),
)


def _settings(use_tuned: bool) -> Settings:
    return Settings(data_dir=Path("unused"), use_tuned_fusion=use_tuned)


def test_a_tuned_fit_in_use_is_named_with_its_widened_channels() -> None:
    configs = configs_for("hybrid", None, ablation=True, tuned=True)
    statement = state_fusion(configs, _settings(True), TUNED_FIT, channel_k=100, depth=100,
                             named_by_flag=False)
    assert statement.source == "tuned" and statement.headline == "hybrid-tuned"
    assert statement.line() == (
        "fusion: tuned for this KB (zscore w=1/0.5 channel_k=50 (each channel widened to 100 "
        "for top_k 100); held-out ndcg@10 +0.031 over zscore w=1/0.7 widths=100/100), "
        "RAGSIFT_USE_TUNED_FUSION=true")
    assert statement.to_json()["tuned"]["sparse_weight"] == 0.5


def test_the_default_says_when_a_fit_exists_but_is_off() -> None:
    configs = configs_for("hybrid", None, ablation=False)
    statement = state_fusion(configs, _settings(False), TUNED_FIT, channel_k=100, depth=10,
                             named_by_flag=False)
    assert statement.source == "default"
    assert statement.line() == (
        "fusion: default (zscore w=1/0.7 channel_k=100); this KB's tuned fusion (zscore "
        "w=1/0.5 channel_k=50) is not used: RAGSIFT_USE_TUNED_FUSION=false")
    assert statement.to_json()["use_tuned_fusion"] is False


def test_the_setting_on_an_untuned_kb_and_a_named_method_are_stated() -> None:
    untuned = state_fusion(configs_for("hybrid", None, ablation=False), _settings(True), None,
                           channel_k=100, depth=10, named_by_flag=False)
    assert untuned.source == "default"
    assert untuned.line().endswith("RAGSIFT_USE_TUNED_FUSION=true, but this KB was never tuned")
    named = state_fusion(configs_for("hybrid", "rrf", ablation=False, tuned=True),
                         _settings(True), TUNED_FIT, channel_k=100, depth=10,
                         named_by_flag=True)
    assert named.source == "request"
    assert named.line() == (
        "fusion: named by the evaluation (rrf w=1/0.7 channel_k=100 k=60, weights from the "
        "settings); this KB's tuned fusion (zscore w=1/0.5 channel_k=50) is not used: "
        "--fusion names one")


def test_a_single_channel_fuses_nothing() -> None:
    statement = state_fusion(configs_for("sparse", None, ablation=False), _settings(False),
                             None, channel_k=100, depth=10, named_by_flag=False)
    assert statement.source is None and statement.line() == "fusion: none (sparse is one channel)"


def test_the_headline_is_the_tuned_then_the_default_configuration() -> None:
    assert headline_config(configs_for("hybrid", None, ablation=True, tuned=True)) == TUNED
    assert headline_config(configs_for("hybrid", None, ablation=True)).name == "hybrid-zscore"
