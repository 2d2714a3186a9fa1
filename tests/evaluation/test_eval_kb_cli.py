"""`ragsift eval --kb` as a user runs it: a real process on a live KB, stderr not a terminal."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evaluation.conftest import JsonlWriter, build_handbook_kb
from support.cli import ragsift

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-live")
    build_handbook_kb(root / "data", root / "docs")
    return root / "data"


def test_eval_kb_prints_json_with_the_fusion_source_and_progress_lines_in_a_log(
    handbook: Path, tmp_path: Path, jsonl: JsonlWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGSIFT_PROGRESS_INTERVAL_S", "0.001")
    monkeypatch.delenv("RAGSIFT_USE_TUNED_FUSION", raising=False)  # a stored fit stays unused
    labels = jsonl(tmp_path / "labels.jsonl", [
        {"query": "what does error E-104 mean", "relevant": ["wifi.md"]},
        {"query": "hotel limit per night", "relevant": [{"document": "travel.md", "grade": 2}]},
        {"query": "保修多久", "relevant": ["warranty.md"]},
    ])
    done = ragsift(handbook, "eval", "--kb", "handbook", "--queries", str(labels), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kb"]["live"] is True and report["kb"]["documents"] == 6
    assert report["fusion_source"] == "default"
    assert [c["name"] for c in report["configs"]] == ["hybrid-zscore"]
    assert report["configs"][0]["queries_scored"] == 3
    # a pipe is not a terminal: plain lines, one per interval and the last one
    assert "eval: querying hybrid-zscore 3/3 (100%)" in done.stderr
    assert "\x1b[" not in done.stderr

    table = ragsift(handbook, "eval", "--kb", "handbook", "--queries", str(labels),
                    "--mode", "sparse", "--markdown")
    assert table.returncode == 0, table.stderr
    assert "knowledge base handbook (live" in table.stdout
    assert "fusion: none (sparse is one channel)" in table.stdout


def test_eval_kb_states_a_tuned_fusion_when_the_setting_is_on(
    handbook: Path, tmp_path: Path, jsonl: JsonlWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragsift.bootstrap import build
    from ragsift.config import Settings
    from ragsift.domain.tuning import TunedFusion

    container = build(Settings(data_dir=handbook))
    try:
        kb = container.repository.get_kb_by_name("handbook")
        assert kb is not None
        container.repository.save_tuned_fusion(TunedFusion(
            kb_id=kb.id, fusion="zscore", dense_weight=1.0, sparse_weight=0.5, channel_k=50,
            rrf_k=60, metric="ndcg@10", queries=10, folds=2, baseline="zscore", baseline_score=0.5,
            tuned_score=0.6, cv_gain=0.05, cv_gain_spread=0.01, tuned_at=datetime.now(UTC)))
    finally:
        container.close()
    labels = jsonl(tmp_path / "labels.jsonl", [{"query": "保修多久", "relevant": ["warranty.md"]}])
    monkeypatch.setenv("RAGSIFT_USE_TUNED_FUSION", "true")
    done = ragsift(handbook, "eval", "--kb", "handbook", "--queries", str(labels), "--markdown")
    assert done.returncode == 0, done.stderr
    assert "fusion: tuned for this KB (zscore w=1/0.5 channel_k=50" in done.stdout
    assert "RAGSIFT_USE_TUNED_FUSION=true" in done.stdout and "hybrid-tuned" in done.stdout
    monkeypatch.setenv("RAGSIFT_USE_TUNED_FUSION", "false")
    off = ragsift(handbook, "eval", "--kb", "handbook", "--queries", str(labels), "--json")
    assert off.returncode == 0, off.stderr
    report = json.loads(off.stdout)
    assert report["fusion_source"] == "default"
    assert report["configs"][0]["tuned_fusion_applied"] == 0


def test_eval_usage_errors_exit_2_with_a_clear_message(
    handbook: Path, tmp_path: Path, jsonl: JsonlWriter
) -> None:
    neither = ragsift(handbook, "eval")
    assert neither.returncode == 2 and "exactly one of DATASET" in neither.stderr
    both = ragsift(handbook, "eval", str(tmp_path), "--kb", "handbook")
    assert both.returncode == 2 and "exactly one of DATASET" in both.stderr
    no_labels = ragsift(handbook, "eval", "--kb", "handbook")
    assert no_labels.returncode == 2 and "--kb needs --queries" in no_labels.stderr
    labels = jsonl(tmp_path / "labels.jsonl", [{"query": "q", "relevant": ["ghost.pdf"]}])
    unknown = ragsift(handbook, "eval", "--kb", "handbook", "--queries", str(labels))
    assert unknown.returncode == 2 and "'ghost.pdf'" in unknown.stderr
