"""Document-level dedup, configurations, TREC run files and stage notes, without a model."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from ragsift.config import Settings
from ragsift.domain.models import Locator
from ragsift.domain.results import RetrievalHit
from ragsift.evaluation.metrics import evaluate_run
from ragsift.evaluation.report import run_paths, write_trec_run
from ragsift.evaluation.runner import (
    ABLATION,
    TUNED,
    ConfigResult,
    EvalRunner,
    RankedDoc,
    RunConfig,
    configs_for,
    dedupe_hits,
)
from ragsift.evaluation.session import (
    EvalOptions,
    StageSwitches,
    ablation_configs,
    kb_name,
    stage_notes,
    stage_switches,
)
from ragsift.retrieval.service import RetrievalService


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


def test_ablation_runs_five_configurations_and_single_runs_one() -> None:
    configs = configs_for("hybrid", "rrf", ablation=True)
    assert [c.name for c in configs] == [
        "dense", "sparse", "hybrid-rrf", "hybrid-weighted", "hybrid-zscore"]
    # the settings' method (zscore by default) is the "default" one, the others are named
    assert [c.fusion_source for c in configs] == [None, None, "request", "request", "default"]
    assert configs_for("hybrid", "weighted", ablation=False) == (
        RunConfig("hybrid-weighted", "hybrid", "weighted", fusion_source="request"),
    )
    assert configs_for("hybrid", None, ablation=False, default_fusion="rrf") == (
        RunConfig("hybrid-rrf", "hybrid", "rrf", fusion_source="default"),
    )
    assert configs_for("sparse", "weighted", ablation=False) == (RunConfig("sparse", "sparse"),)


def test_a_tuned_fit_in_effect_is_run_as_its_own_configuration() -> None:
    assert configs_for("hybrid", None, ablation=False, tuned=True) == (TUNED,)
    # --fusion names a method: the fit is not used
    assert configs_for("hybrid", "rrf", ablation=False, tuned=True)[0].fusion_source == "request"
    ablation = configs_for("hybrid", None, ablation=True, tuned=True)
    assert ablation[-1] == TUNED and len(ablation) == 6
    assert configs_for("dense", None, ablation=False, tuned=True) == (
        RunConfig("dense", "dense", second_dense=False),)


def test_requests_ask_for_the_tuned_fusion_explicitly_on_or_off() -> None:
    runner = EvalRunner(cast(RetrievalService, None), "kb", {}, ks=(10,), channel_k=100)
    tuned = runner.request(TUNED, "q")
    # the fit chooses method, width and weights; only the depth is the evaluation's
    assert tuned.tuned_fusion is True and tuned.fusion is None and tuned.channel_k is None
    assert tuned.candidate_k == 10 and tuned.top_k == 10
    plain = runner.request(RunConfig("hybrid-zscore", "hybrid", "zscore"), "q")
    assert plain.tuned_fusion is False and plain.fusion == "zscore" and plain.channel_k == 100


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


def test_stages_run_only_when_configured_and_not_disabled() -> None:
    bare = Settings(data_dir=Path("unused"))
    assert stage_switches(bare, EvalOptions()) == StageSwitches(False, False, False)
    served = Settings(data_dir=Path("unused"), llm_base_url="http://127.0.0.1:9/v1",
                      reranker="http", rerank_base_url="http://127.0.0.1:9/v1")
    assert stage_switches(served, EvalOptions()) == StageSwitches(True, True, False)
    off = EvalOptions(disable_rewrite=True, disable_rerank=True, enable_auto_merge=True)
    switches = stage_switches(served, off)
    assert switches == StageSwitches(False, False, True)
    expand = stage_switches(served, EvalOptions(enable_parent_expansion=True))
    assert (expand.auto_merge, expand.small2big) == (False, True)
    assert stage_notes(expand, EvalOptions())["parent_expansion"].startswith("on (--enable-pa")
    notes = stage_notes(switches, off)
    assert notes["rewrite"] == "off (--disable-rewrite)"
    assert notes["rerank"] == "off (--disable-rerank)"


def test_the_ablation_adds_each_configured_stage_switched_off() -> None:
    configs = ablation_configs(configs_for("hybrid", None, ablation=True),
                               StageSwitches(True, True, False), ablation=True)
    names = [c.name for c in configs]
    assert names[-3:] == ["hybrid-zscore-no-rewrite", "hybrid-zscore-no-rerank",
                          "hybrid-zscore-consistency"]
    assert all(c.rewrite and c.rerank and not c.consistency for c in configs[:5])
    assert not configs[-3].rewrite and configs[-3].rerank
    assert configs[-1].consistency and configs[-1].rewrite and configs[-1].fusion == "zscore"
    single = ablation_configs(ABLATION[2:3], StageSwitches(True, False, False), ablation=False)
    assert [(c.name, c.rewrite) for c in single] == [("hybrid-rrf", True)]


def test_the_ablation_turns_the_consistency_rescoring_off_where_the_settings_turn_it_on(
) -> None:
    configs = ablation_configs(configs_for("hybrid", None, ablation=True),
                               StageSwitches(False, False, False, consistency=True),
                               ablation=True)
    assert all(c.consistency for c in configs[:-1])
    assert configs[-1].name == "hybrid-zscore-no-consistency" and not configs[-1].consistency


def test_an_eval_request_names_the_consistency_switch_either_way() -> None:
    runner = EvalRunner(cast(RetrievalService, None), "kb", {}, ks=(10,), channel_k=100)
    on = RunConfig("hybrid-zscore-consistency", "hybrid", "zscore", consistency=True)
    assert runner.request(on, "q").consistency is True
    assert runner.request(RunConfig("hybrid-zscore", "hybrid", "zscore"), "q").consistency is False


def test_chunked_and_whole_passage_corpora_live_in_different_knowledge_bases() -> None:
    assert kb_name("scifact", chunk=False) == "eval-scifact"
    assert kb_name("scifact", chunk=True) == "eval-scifact-chunked"


def test_the_ablation_searches_the_second_dense_channel_for_every_query_where_there_is_one(
) -> None:
    configs = ablation_configs(configs_for("hybrid", None, ablation=True),
                               StageSwitches(False, False, False, second_dense=True),
                               ablation=True)
    assert configs[-1].name == "hybrid-zscore-second-dense" and configs[-1].second_dense
    assert configs[0].name == "dense" and configs[0].second_dense is False  # e5 alone
    assert all(c.second_dense is None for c in configs[1:-1])  # the settings' policy
    without = ablation_configs(configs_for("hybrid", None, ablation=True),
                               StageSwitches(False, False, False), ablation=True)
    assert "hybrid-zscore-second-dense" not in [c.name for c in without]
    runner = EvalRunner(cast(RetrievalService, None), "kb", {}, ks=(10,), channel_k=100)
    assert runner.request(configs[-1], "q").second_dense is True
    assert runner.request(configs[1], "q").second_dense is None
