"""`evaluate_kb` on a live KB with the real e5 embedder: labels, both levels, read only, fusion."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evaluation.conftest import JsonlWriter, build_handbook_kb
from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import CHILD_LEVEL
from ragsift.domain.tuning import TunedFusion
from ragsift.evaluation.live_kb import evaluate_kb
from ragsift.evaluation.report import EvalReport, to_json, to_markdown
from ragsift.evaluation.session import EvalOptions

pytestmark = pytest.mark.slow


def _container(data_dir: Path, **overrides: Any) -> Container:
    return build(Settings(data_dir=data_dir, query_cache_size=0, **overrides))


def _snapshot(container: Container) -> dict[str, Any]:
    """What an evaluation must leave as it was: documents, chunks, version, index size."""
    kb = container.repository.get_kb_by_name("handbook")
    assert kb is not None
    documents = container.repository.list_documents(kb.id)
    return {
        "documents": sorted((d.id, d.status, d.sha256, d.updated_at) for d in documents),
        "chunks": {d.id: len(container.repository.list_chunks(d.id)) for d in documents},
        "version": container.repository.get_version_state(kb.id),
        "indexed": container.index.count(),
    }


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("live")
    build_handbook_kb(root / "data", root / "docs")
    return root / "data"


def _labels(path: Path, jsonl: JsonlWriter, child: str) -> Path:
    return jsonl(path, [
        {"query": "年假可以结转几天？", "relevant": [{"chunk": child, "grade": 2}]},
        {"query": "what does error E-104 mean", "relevant": ["wifi.md"]},
        {"query": "hotel limit per night", "relevant": [{"document": "travel.md"}]},
        {"query": "保修多久", "relevant": {"warranty.md": 1}},
        {"query": "where do employees park", "relevant": ["team-a/notes.md"]},
    ])


def _child_of_leave(container: Container) -> str:
    kb = container.repository.get_kb_by_name("handbook")
    assert kb is not None
    leave = next(d for d in container.repository.list_documents(kb.id) if d.filename == "leave.md")
    return next(c.id for c in container.repository.list_chunks(leave.id) if c.level == CHILD_LEVEL)


def _run(data_dir: Path, labels: Path, options: EvalOptions, **overrides: Any) -> EvalReport:
    container = _container(data_dir, **overrides)
    try:
        return evaluate_kb(container, "handbook", labels, options)
    finally:
        container.close()


def test_a_live_kb_is_scored_on_documents_and_chunks_and_left_unchanged(
    handbook: Path, tmp_path: Path, jsonl: JsonlWriter
) -> None:
    container = _container(handbook)
    try:
        before = _snapshot(container)
        child = _child_of_leave(container)
    finally:
        container.close()
    labels = _labels(tmp_path / "labels.jsonl", jsonl, child)
    report = _run(handbook, labels, EvalOptions(ablation=True))
    container = _container(handbook)
    try:
        assert _snapshot(container) == before
    finally:
        container.close()
    assert report.live is not None and report.index is None
    assert (report.live.documents, report.live.chunk_judged) == (6, 1)
    assert (report.queries_loaded, report.queries_judged) == (5, 5)
    assert [r.config.name for r in report.results] == [
        "dense", "sparse", "hybrid-rrf", "hybrid-weighted", "hybrid-zscore",
        "hybrid-zscore-consistency", "hybrid-zscore-second-dense"]
    hybrid = report.results[-3]
    # five distinct topics: the relevant document leads nearly every list
    assert hybrid.means["mrr@10"] >= 0.8
    assert set(hybrid.chunk_per_query) == {"q1"}
    assert 0.0 < hybrid.chunk_means["recall@10"] <= 1.0
    document = to_json(report)
    assert document["kb"]["live"] is True and document["index"] is None
    assert document["fusion_source"] == "default"
    assert document["configs"][-1]["chunk_queries_scored"] == 1
    assert "chunk level:" in to_markdown(report)


def test_unknown_and_ambiguous_labels_fail_before_any_search(
    handbook: Path, tmp_path: Path, jsonl: JsonlWriter
) -> None:
    labels = jsonl(tmp_path / "labels.jsonl", [
        {"query": "q", "relevant": ["notes.md"]},
        {"query": "r", "relevant": ["missing.pdf"]},
    ])
    with pytest.raises(InvalidInput, match=r"several documents.*notes.md.*'missing.pdf'"):
        _run(handbook, labels, EvalOptions())
    with pytest.raises(InvalidInput, match="unknown knowledge base 'nope'"):
        container = _container(handbook)
        try:
            evaluate_kb(container, "nope", labels, EvalOptions())
        finally:
            container.close()


def test_a_stored_tuned_fusion_runs_and_is_stated_only_when_switched_on(
    handbook: Path, tmp_path: Path, jsonl: JsonlWriter
) -> None:
    container = _container(handbook)
    try:
        kb = container.repository.get_kb_by_name("handbook")
        assert kb is not None
        container.repository.save_tuned_fusion(TunedFusion(
            kb_id=kb.id, fusion="weighted", dense_weight=1.0, sparse_weight=0.0, channel_k=20,
            rrf_k=60, metric="ndcg@10", queries=5, folds=2, baseline="zscore", baseline_score=0.5,
            tuned_score=0.6, cv_gain=0.05, cv_gain_spread=0.01, tuned_at=datetime.now(UTC)))
        child = _child_of_leave(container)
    finally:
        container.close()
    labels = _labels(tmp_path / "labels.jsonl", jsonl, child)
    on = _run(handbook, labels, EvalOptions(ablation=True), use_tuned_fusion=True)
    assert on.fusion is not None and on.fusion.source == "tuned"
    assert on.fusion.line().startswith("fusion: tuned for this KB (weighted w=1/0 channel_k=20")
    # the consistency and second-dense runs of the ablation are copies of the headline
    # (tuned) configuration
    assert [r.config.name for r in on.results[-3:]] == [
        "hybrid-tuned", "hybrid-tuned-consistency", "hybrid-tuned-second-dense"]
    # the service's own trace: the fit ran for every tuned query and for no other, though
    # RAGSIFT_USE_TUNED_FUSION is on for all of them
    assert [r.tuned_applied for r in on.results] == [0, 0, 0, 0, 0, 5, 5, 5]
    assert to_json(on)["configs"][4]["fusion_source"] == "default"
    off = _run(handbook, labels, EvalOptions())
    assert off.fusion is not None and off.fusion.source == "default"
    assert [r.config.name for r in off.results] == ["hybrid-zscore"]
    assert off.fusion.line().endswith("is not used: RAGSIFT_USE_TUNED_FUSION=false")
    assert to_json(off)["fusion"]["tuned"]["sparse_weight"] == 0.0
