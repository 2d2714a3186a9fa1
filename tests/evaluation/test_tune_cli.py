"""`ragsift tune` as a user runs it: fit on labels, store with the KB, used only when opted in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.conftest import JsonlWriter
from support.cli import ragsift

pytestmark = pytest.mark.slow


def test_tune_stores_a_fusion_that_only_opted_in_searches_use(
    dataset_dir: Path, tmp_path: Path, jsonl: JsonlWriter
) -> None:
    data = tmp_path / "data"
    built = ragsift(data, "eval", str(dataset_dir), "--mode", "dense")  # builds eval-tinyset
    assert built.returncode == 0, built.stderr
    labels = jsonl(tmp_path / "labels.jsonl", [
        {"query": "年假可以结转几天？", "relevant": {"p1": 1}},
        {"query": "what does error E-104 mean", "relevant": {"p3": 1}},
        {"query": "hotel limit per night", "relevant": {"p5": 2, "p2": 1}},
        {"query": "保修多久", "relevant": {"p6": 1, "no-such-doc": 1}},
    ])

    dry = ragsift(data, "tune", "--kb", "eval-tinyset", "--queries", str(labels),
                  "--folds", "2", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert "1 judgments name no READY document" in dry.stderr
    report = json.loads(dry.stdout)
    assert report["stored"] is False and report["tuned"]["queries"] == 4
    assert len(report["folds"]) == 2 and len(report["chosen_per_fold"]) == 2
    untuned = ragsift(data, "explain", "warranty", "--kb", "eval-tinyset", "--tuned", "--json")
    assert json.loads(untuned.stdout)["trace"]["tuned_fusion"]["status"] == "skipped"

    done = ragsift(data, "tune", "--kb", "eval-tinyset", "--queries",
                   str(dataset_dir / "queries.dev.jsonl"), "--qrels",
                   str(dataset_dir / "qrels.tsv"), "--folds", "2")
    assert done.returncode == 0, done.stderr
    assert "2-fold held-out gain over the baseline" in done.stdout
    assert "stored with the knowledge base" in done.stdout

    opted_in = json.loads(ragsift(data, "explain", "warranty", "--kb", "eval-tinyset",
                                  "--tuned", "--json").stdout)["trace"]
    assert opted_in["tuned_fusion"]["status"] == "applied"
    assert opted_in["fusion"] == opted_in["tuned_fusion"]["reason"].split()[0]
    default = json.loads(ragsift(data, "explain", "warranty", "--kb", "eval-tinyset",
                                 "--json").stdout)["trace"]
    assert default["tuned_fusion"]["status"] == "off" and default["fusion"] == "zscore"


def test_tune_with_too_few_labels_or_a_bad_metric_exits_2(
    dataset_dir: Path, tmp_path: Path, jsonl: JsonlWriter
) -> None:
    data = tmp_path / "data"
    assert ragsift(data, "eval", str(dataset_dir), "--mode", "dense").returncode == 0
    labels = jsonl(tmp_path / "labels.jsonl", [{"query": "保修多久", "relevant": {"p6": 1}}])
    few = ragsift(data, "tune", "--kb", "eval-tinyset", "--queries", str(labels))
    assert few.returncode == 2 and "needs at least 10" in few.stderr
    metric = ragsift(data, "tune", "--kb", "eval-tinyset", "--queries", str(labels),
                     "--metric", "ndcg@7")
    assert metric.returncode == 2 and "metric must be one of" in metric.stderr
