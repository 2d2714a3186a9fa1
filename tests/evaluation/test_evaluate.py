"""Evaluation end to end with the real e5 embedder on a tiny bilingual corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.evaluation.corpus_index import CorpusIndexer, document_id
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.metrics import evaluate_run, mean_metrics
from ragsift.evaluation.report import EvalReport, to_json
from ragsift.evaluation.session import EvalOptions, evaluate, kb_name

pytestmark = pytest.mark.slow


def _container(data_dir: Path, **overrides: Any) -> Container:
    return build(Settings(data_dir=data_dir, query_cache_size=0, **overrides))


def _evaluate(data_dir: Path, dataset_dir: Path, options: EvalOptions, **overrides: Any
              ) -> tuple[EvalReport, int]:
    """The report and the passage-cache misses of one run in a fresh container."""
    container = _container(data_dir, **overrides)
    try:
        report = evaluate(container, load_beir_folder(dataset_dir), options)
        return report, container.embedder.misses
    finally:
        container.close()


@pytest.fixture(scope="module")
def first_run(
    shared_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, EvalReport, int]:
    data_dir = tmp_path_factory.mktemp("data")
    options = EvalOptions(ablation=True, dump_run=data_dir / "runs" / "run.trec")
    report, misses = _evaluate(data_dir, shared_dataset_dir, options)
    return data_dir, report, misses


def test_ablation_builds_the_kb_and_scores_four_configurations(
    first_run: tuple[Path, EvalReport, int],
) -> None:
    _, report, misses = first_run
    assert [r.config.name for r in report.results] == [
        "dense", "sparse", "hybrid-rrf", "hybrid-weighted", "hybrid-zscore",
        "hybrid-zscore-consistency", "hybrid-zscore-second-dense"]
    assert report.index.built == 8 and report.index.chunks_built == 8
    assert misses == 8 and report.embedder.embedded == 8
    assert report.embedder.alone_per_s is not None and report.embedder.alone_per_s > 0
    assert report.queries_judged == 4
    for result in report.results:
        assert set(result.per_query) == {"q1", "q2", "q3", "q4"}
        assert len(result.latencies_ms) == 4
        assert not result.failed_queries
        assert {"ndcg@10", "mrr@10", "recall@100", "precision@1"} <= set(result.means)
    dense = report.results[0].means
    assert dense["mrr@10"] >= 0.75  # e5 finds these bilingual paraphrases near the top
    assert report.results[2].means["recall@100"] == 1.0  # hybrid sees the whole tiny corpus


def test_dumped_trec_runs_rescore_to_the_reported_means(
    first_run: tuple[Path, EvalReport, int], shared_dataset_dir: Path,
) -> None:
    _, report, _ = first_run
    qrels = load_beir_folder(shared_dataset_dir).qrels
    for result in report.results:
        lines = Path(report.run_files[result.config.name]).read_text("utf-8").splitlines()
        run: dict[str, list[str]] = {}
        for line in lines:
            qid, q0, doc, rank, _score, tag = line.split()
            assert q0 == "Q0" and tag == f"ragsift-{result.config.name}"
            assert int(rank) == len(run.setdefault(qid, [])) + 1
            run[qid].append(doc)
        assert mean_metrics(evaluate_run(run, qrels, report.ks)) == pytest.approx(result.means)


def test_rerun_reuses_the_kb_and_embeds_nothing(
    first_run: tuple[Path, EvalReport, int], shared_dataset_dir: Path,
) -> None:
    data_dir, first, _ = first_run
    report, misses = _evaluate(data_dir, shared_dataset_dir, EvalOptions(mode="sparse"))
    assert misses == 0
    assert report.index.built == 0 and report.index.reused == 8
    assert report.embedder.alone_per_s is None  # nothing built, nothing to compare
    assert report.results[0].means == first.results[1].means  # sparse is deterministic
    payload = to_json(report)
    assert payload["index"]["embedded"] == 0
    json.dumps(payload)  # serialisable as is


def test_interrupted_build_resumes_from_ready_documents_and_the_embedding_cache(
    dataset_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = load_beir_folder(dataset_dir)
    container = _container(tmp_path / "data")
    kb = container.ingestion.ensure_kb(kb_name(data.name, chunk=False))
    real_replace = container.repository.replace_chunks
    calls = []

    def crash_on_third(doc_id: str, chunks: Any) -> None:
        calls.append(doc_id)
        if len(calls) == 3:  # first document of the second batch: indexed, embedded, unfinished
            raise RuntimeError("power cut")
        real_replace(doc_id, chunks)

    monkeypatch.setattr(container.repository, "replace_chunks", crash_on_third)
    indexer = CorpusIndexer(container.repository, container.index, container.embedder,
                            embed_batch=2, write_batch=2)
    with pytest.raises(RuntimeError, match="power cut"):
        indexer.build(kb, data.corpus)
    statuses = [d.status for d in container.repository.list_documents(kb.id)]
    assert sorted(statuses) == [DocumentStatus.INDEXING] + [DocumentStatus.READY] * 2
    container.close()

    report, misses = _evaluate(tmp_path / "data", dataset_dir, EvalOptions(mode="dense"))
    assert (report.index.reused, report.index.built, report.index.removed) == (2, 6, 1)
    assert misses == 4  # the interrupted batch's two passages came from the cache
    container = _container(tmp_path / "data")
    try:
        documents = container.repository.list_documents(kb.id)
        assert [d.status for d in documents] == [DocumentStatus.READY] * 8
        assert container.index.count() == 8  # re-upserted chunk ids replaced, not duplicated
    finally:
        container.close()
    assert report.results[0].means["mrr@10"] >= 0.75


def test_chunked_corpus_indexes_title_with_every_child_and_scores_each_document_once(
    dataset_dir: Path, tmp_path: Path, jsonl: Any,
) -> None:
    corpus_path = dataset_dir / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus_path.read_text("utf-8").splitlines()]
    long_text = " ".join(
        f"Rule {i}: travel by train is reimbursed in second class for trips of {i} hours."
        for i in range(1, 9)
    )
    rows.append({"id": "p9", "title": "Travel policy", "text": long_text})
    jsonl(corpus_path, rows)
    jsonl(dataset_dir / "queries.dev.jsonl",
          [{"id": "q5", "text": "which class for train travel"}, {"id": "q6", "text": "？？"}])
    (dataset_dir / "qrels.tsv").write_text("q5\tp9\t1\nq6\tp1\t1\n", encoding="utf-8")
    small = {"chunk_tokens": 32, "chunk_overlap_tokens": 4, "parent_max_tokens": 64}
    report, _ = _evaluate(tmp_path / "data", dataset_dir,
                          EvalOptions(mode="hybrid", chunk=True), **small)
    assert report.index.chunks_built > report.index.passages
    result = report.results[0]
    for docs in result.runs.values():
        ids = [d.corpus_id for d in docs]
        assert len(ids) == len(set(ids))
    assert result.runs["q5"][0].corpus_id == "p9"
    assert result.per_query["q5"]["mrr@1"] == 1.0
    assert "q6" in result.failed_queries and result.per_query["q6"]["recall@100"] == 0.0
    container = _container(tmp_path / "data", **small)
    try:
        kb = container.repository.get_kb_by_name(kb_name("tinyset", chunk=True))
        assert kb is not None
        chunks = container.repository.list_chunks(document_id(kb.id, "p9"))
        children = [c for c in chunks if c.level == CHILD_LEVEL]
        assert len(children) > 1
        assert all(c.text.startswith("Travel policy\n") for c in children)
        assert all(c.parent_id is not None for c in children)
    finally:
        container.close()
