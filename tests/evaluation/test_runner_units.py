"""Document-level dedup, configurations, TREC run files and stage notes, without a model."""

from __future__ import annotations

from pathlib import Path

from ragsift.domain.models import Locator
from ragsift.domain.results import RetrievalHit
from ragsift.evaluation.metrics import evaluate_run
from ragsift.evaluation.report import run_paths, write_trec_run
from ragsift.evaluation.runner import ConfigResult, RankedDoc, RunConfig, configs_for, dedupe_hits
from ragsift.evaluation.session import EvalOptions, kb_name, stage_notes


def _hit(rank: int, chunk: str, document: str, score: float) -> RetrievalHit:
    return RetrievalHit(
        rank=rank, chunk_id=chunk, document_id=document, filename="", text="", heading_path=(),
        locator=Locator(), parent_id=None, dense_rank=None, dense_score=None, sparse_rank=None,
        sparse_score=None, fusion_score=score, retrieval_sources=("dense",),
    )


def test_two_chunks_of_one_document_count_once_at_the_first_rank() -> None:
    hits = [_hit(1, "c1", "docA", 0.9), _hit(2, "c2", "docB", 0.8), _hit(3, "c3", "docA", 0.7),
            _hit(4, "c4", "docC", 0.6)]
    ranked = dedupe_hits(hits, {"docA": "p1", "docB": "p2", "docC": "p3"})
    assert ranked == [RankedDoc("p1", 0.9), RankedDoc("p2", 0.8), RankedDoc("p3", 0.6)]
    # p3 is relevant and sits at document rank 3, not chunk rank 4
    metrics = evaluate_run({"q": [d.corpus_id for d in ranked]}, {"q": {"p3": 1}}, ks=(3,))
    assert metrics["q"]["mrr@3"] == 1 / 3


def test_hits_of_unknown_documents_are_ignored() -> None:
    assert dedupe_hits([_hit(1, "c1", "gone", 1.0)], {"docA": "p1"}) == []


def test_ablation_runs_four_configurations_and_single_runs_one() -> None:
    names = [c.name for c in configs_for("hybrid", "rrf", ablation=True)]
    assert names == ["dense", "sparse", "hybrid-rrf", "hybrid-weighted"]
    assert configs_for("hybrid", "weighted", ablation=False) == (
        RunConfig("hybrid-weighted", "hybrid", "weighted"),
    )
    assert configs_for("sparse", "weighted", ablation=False) == (RunConfig("sparse", "sparse"),)


def test_trec_run_lines_are_qid_q0_docid_rank_score_tag(tmp_path: Path) -> None:
    result = ConfigResult(
        config=RunConfig("dense", "dense"),
        runs={"q1": [RankedDoc("p1", 0.91), RankedDoc("p2", 0.5)], "q2": []},
        per_query={}, means={}, latencies_ms=(), failed_queries={}, degraded_queries=0,
    )
    path = tmp_path / "out" / "run.trec"
    assert write_trec_run(path, result, "ragsift-dense") == 2
    assert path.read_text(encoding="utf-8").splitlines() == [
        "q1 Q0 p1 1 0.910000 ragsift-dense",
        "q1 Q0 p2 2 0.500000 ragsift-dense",
    ]


def test_several_configurations_get_one_run_file_each(tmp_path: Path) -> None:
    assert run_paths(tmp_path / "r.trec", ["dense"]) == {"dense": tmp_path / "r.trec"}
    assert run_paths(tmp_path / "r.trec", ["dense", "hybrid-rrf"]) == {
        "dense": tmp_path / "r.dense.trec", "hybrid-rrf": tmp_path / "r.hybrid-rrf.trec",
    }


def test_absent_stages_are_recorded_as_not_implemented_whatever_the_flags() -> None:
    plain = stage_notes(EvalOptions())
    assert all("not implemented yet" in note for note in plain.values())
    flagged = stage_notes(EvalOptions(disable_rewrite=True, disable_rerank=True,
                                      enable_parent_expansion=True))
    assert "--disable-rewrite changes nothing" in flagged["rewrite"]
    assert "--disable-rerank changes nothing" in flagged["rerank"]
    assert "requested with --enable-parent-expansion" in flagged["parent_expansion"]
    assert "without it" in flagged["parent_expansion"]


def test_chunked_and_whole_passage_corpora_live_in_different_knowledge_bases() -> None:
    assert kb_name("scifact", chunk=False) == "eval-scifact"
    assert kb_name("scifact", chunk=True) == "eval-scifact-chunked"
