"""`ragsift eval` as a user runs it: a real process, JSON on stdout, exit codes 0 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import ragsift

pytestmark = pytest.mark.slow


def test_eval_json_reports_every_configuration_and_the_stages_that_ran(
    dataset_dir: Path, tmp_path: Path
) -> None:
    run_file = tmp_path / "run.trec"
    done = ragsift(tmp_path / "data", "eval", str(dataset_dir), "--ablation", "--json",
                   "--dump-run", str(run_file), "--limit-queries", "3", "--disable-rerank",
                   "--enable-auto-merge", "--enable-parent-expansion")
    assert done.returncode == 0, done.stderr
    # stderr is a pipe, not a terminal: progress comes as lines, each task ends with one
    assert "eval: embedding passages 8/8 (100%)" in done.stderr
    assert "eval: querying hybrid-zscore-no-auto-merge 3/3 (100%)" in done.stderr
    report = json.loads(done.stdout)
    assert report["dataset"] == "tinyset"
    assert report["fusion_source"] == "default" and report["kb"]["live"] is False
    assert report["kb"]["name"] == "eval-tinyset"
    assert report["queries"] == {"loaded": 3, "judged": 3}
    assert [c["name"] for c in report["configs"]] == [
        "dense", "sparse", "hybrid-rrf", "hybrid-weighted", "hybrid-zscore",
        "hybrid-zscore-no-auto-merge", "hybrid-zscore-consistency",
        "hybrid-zscore-second-dense"]
    for config in report["configs"]:
        assert 0.0 <= config["metrics"]["ndcg@10"] <= 1.0
        assert config["latency_ms"]["p50"] > 0 and config["queries_scored"] == 3
    assert report["stages"]["rerank"] == "off (--disable-rerank)"
    assert report["stages"]["rewrite"] == "off: no rewriter configured"
    assert report["stages"]["auto_merge"].startswith("on (--enable-auto-merge)")
    assert report["stages"]["parent_expansion"].startswith("on (--enable-parent-expansion)")
    assert report["stages"]["second_dense"].startswith("on: searched for the queries")
    assert report["index"]["built"] == 8
    assert Path(report["run_files"]["hybrid-rrf"]) == tmp_path / "run.hybrid-rrf.trec"
    first = (tmp_path / "run.dense.trec").read_text("utf-8").splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == "ragsift-dense"

    table = ragsift(tmp_path / "data", "eval", str(dataset_dir), "--mode", "sparse")
    assert table.returncode == 0, table.stderr
    assert "sparse" in table.stdout and "nDCG@10" in table.stdout
    assert "reused knowledge base eval-tinyset" in table.stdout


def test_eval_bad_mode_and_malformed_data_exit_2(dataset_dir: Path, tmp_path: Path) -> None:
    done = ragsift(tmp_path / "data", "eval", str(dataset_dir), "--mode", "fuzzy")
    assert done.returncode == 2 and "--mode" in done.stderr
    (dataset_dir / "qrels.tsv").write_text("q1\tp1\tmaybe\n", encoding="utf-8")
    done = ragsift(tmp_path / "data", "eval", str(dataset_dir))
    assert done.returncode == 2 and "qrels.tsv:1" in done.stderr
