"""The quality gate: a KB's labelled queries run against a candidate and the active version.

Activation is refused when the candidate's mean Recall@k or MRR@k is lower than the active
version's by more than the gate's `max_drop` (absolute). Queries are the evaluation JSONL
labels {"query", "relevant": {key: grade}}; a key names a document by id, by filename, or by
the `corpus_id` an evaluation corpus stores.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import Document
from ragsift.domain.requests import Fusion, Mode
from ragsift.domain.versions import GateConfig, GateReport, LabelledQuery, QueryDiff
from ragsift.evaluation.datasets import EvalQuery, Qrels, load_jsonl_labels
from ragsift.evaluation.runner import ConfigResult, EvalRunner, RunConfig
from ragsift.retrieval.service import RetrievalService

logger = logging.getLogger(__name__)

# Differences below this are float noise, not a changed ranking.
_EPSILON = 1e-9


def read_gate_queries(path: Path) -> tuple[LabelledQuery, ...]:
    """The labelled queries of a JSONL file; InvalidInput names the first bad line."""
    queries, qrels = load_jsonl_labels(path)
    labelled = tuple(LabelledQuery(query=q.text, relevant=qrels[q.id]) for q in queries)
    if not any(grade > 0 for lq in labelled for grade in lq.relevant.values()):
        raise InvalidInput(f"{path}: no query has a relevant document (a grade above 0)")
    return labelled


def corpus_keys(documents: Sequence[Document], queries: Sequence[LabelledQuery]
                ) -> dict[str, str]:
    """Document id -> the key the labels use for it: its id, its corpus_id, or its filename."""
    named = {key for lq in queries for key in lq.relevant}
    keys: dict[str, str] = {}
    for document in documents:
        corpus_id = document.metadata.get("corpus_id")
        if document.id in named:
            keys[document.id] = document.id
        elif isinstance(corpus_id, str) and corpus_id in named:
            keys[document.id] = corpus_id
        else:
            keys[document.id] = document.filename
    return keys


def run_gate(
    retrieval: RetrievalService, kb_id: str, documents: Sequence[Document], gate: GateConfig,
    candidate_seq: int, active_seq: int, mode: Mode, fusion: Fusion,
) -> GateReport:
    """Both versions searched with the gate's queries (no rewrite, no rerank), compared."""
    queries = [EvalQuery(f"q{i}", lq.query) for i, lq in enumerate(gate.queries, start=1)]
    qrels: Qrels = {q.id: dict(lq.relevant) for q, lq in zip(queries, gate.queries, strict=True)}
    keys = corpus_keys(documents, gate.queries)
    config = RunConfig("gate", mode, fusion if mode == "hybrid" else None)

    def measure(seq: int) -> ConfigResult:
        runner = EvalRunner(retrieval, kb_id, keys, ks=(gate.k,), channel_k=max(30, gate.k),
                            kb_version=seq)
        return runner.run(config, queries, qrels)

    candidate, active = measure(candidate_seq), measure(active_seq)
    return compare(kb_id, candidate_seq, active_seq, gate, queries, candidate, active)


def compare(
    kb_id: str, candidate_seq: int, active_seq: int, gate: GateConfig,
    queries: Sequence[EvalQuery], candidate: ConfigResult, active: ConfigResult,
) -> GateReport:
    """The verdict: refused when a mean metric drops by more than `max_drop`."""
    recall, mrr = f"recall@{gate.k}", f"mrr@{gate.k}"
    means = {name: (active.means.get(name, 0.0), candidate.means.get(name, 0.0))
             for name in (recall, mrr)}
    reasons = tuple(
        f"{label}@{gate.k} drops from {before:.4f} to {after:.4f} "
        f"(by {before - after:.4f}, more than the allowed {gate.max_drop:.4f})"
        for label, name in (("Recall", recall), ("MRR", mrr))
        for before, after in [means[name]]
        if before - after > gate.max_drop + _EPSILON
    )
    changed = []
    for query in queries:
        was, now = active.per_query.get(query.id), candidate.per_query.get(query.id)
        if was is None or now is None:
            continue  # not scored: no relevant document
        if abs(was[recall] - now[recall]) > _EPSILON or abs(was[mrr] - now[mrr]) > _EPSILON:
            changed.append(QueryDiff(
                query_id=query.id, query=query.text, recall_active=was[recall],
                recall_candidate=now[recall], mrr_active=was[mrr], mrr_candidate=now[mrr],
            ))
    return GateReport(
        kb_id=kb_id, candidate_seq=candidate_seq, active_seq=active_seq, k=gate.k,
        max_drop=gate.max_drop, queries=len(candidate.per_query),
        recall_active=means[recall][0], recall_candidate=means[recall][1],
        mrr_active=means[mrr][0], mrr_candidate=means[mrr][1],
        passed=not reasons, reasons=reasons, changed=tuple(changed),
    )
