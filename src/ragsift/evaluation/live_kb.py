"""`ragsift eval --kb NAME --queries labels.jsonl`: score a live knowledge base as it is served.

Nothing is built or written: the labels are resolved against the KB's READY documents and the
chunks they name, and every configuration searches through RetrievalService (the KB's active
version, or --kb-version). Documents are judged by their own id.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ragsift.bootstrap import Container
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import DocumentStatus, KnowledgeBase
from ragsift.evaluation.kb_labels import (
    KbJudgments,
    label_names,
    load_kb_labels,
    resolve_kb_labels,
)
from ragsift.evaluation.progress import ProgressFactory, no_progress
from ragsift.evaluation.report import EmbedderRates, EvalReport, LiveKb
from ragsift.evaluation.runner import MAX_TOP_K, EvalRunner
from ragsift.evaluation.session import EvalOptions, check_options, run_configs

logger = logging.getLogger(__name__)


def _kb(container: Container, name: str) -> KnowledgeBase:
    kb = container.repository.get_kb_by_name(name)
    if kb is None:
        known = ", ".join(k.name for k in container.repository.list_kbs()) or "none"
        raise InvalidInput(f"unknown knowledge base {name!r} (known: {known})")
    return kb


def judgments_for(container: Container, kb: KnowledgeBase, labels: Path) -> KbJudgments:
    """The labels of `labels` resolved against `kb`; InvalidInput on any unresolved one."""
    labelled = load_kb_labels(labels)
    documents = container.repository.list_documents(kb.id, DocumentStatus.READY)
    chunks = [c for c in container.repository.get_chunks(label_names(labelled))
              if c.kb_id == kb.id]
    judgments = resolve_kb_labels(labelled, documents, chunks)
    if not any(g > 0 for relevant in judgments.documents.values() for g in relevant.values()):
        raise InvalidInput(f"{labels}: no label has a grade above 0: nothing to score")
    return judgments


def _version(container: Container, kb: KnowledgeBase, pinned: int | None) -> int | None:
    if pinned is not None:
        return pinned
    state = container.repository.get_version_state(kb.id)
    return None if state is None else state.active_seq


def evaluate_kb(
    container: Container, kb_name: str, labels: Path, options: EvalOptions,
    progress: ProgressFactory = no_progress, max_queries: int | None = None,
) -> EvalReport:
    """Every configuration of `options` on the live KB `kb_name`, scored with `labels`."""
    if options.chunk:
        raise InvalidInput("--chunk lays out a built corpus; a live KB keeps its own chunks")
    ks = check_options(options)
    kb = _kb(container, kb_name)
    judgments = judgments_for(container, kb, labels)
    if max_queries is not None:
        judgments = judgments.limited(max_queries)
    documents = container.repository.list_documents(kb.id, DocumentStatus.READY)
    # top_k = the largest k, as for a built corpus: a deeper list would widen each channel past
    # RAGSIFT_CHANNEL_K and change the fusion that is served; a document's later chunks only
    # make R@100 count the documents among the top 100 chunks
    depth = min(MAX_TOP_K, max(ks))
    runner = EvalRunner(container.retrieval, kb.id, {d.id: d.id for d in documents}, ks=ks,
                        channel_k=options.channel_k or container.settings.channel_k,
                        depth=depth, kb_version=options.kb_version)
    runs = run_configs(container, runner, kb.id, judgments.queries, judgments.documents,
                       options, progress, chunk_qrels=judgments.chunks)
    judged = sum(1 for q in judgments.queries
                 if any(g > 0 for g in judgments.documents.get(q.id, {}).values()))
    live = LiveKb(id=kb.id, name=kb.name, documents=len(documents),
                  version=_version(container, kb, options.kb_version), labels=str(labels),
                  chunk_judged=sum(1 for relevant in judgments.chunks.values()
                                   if any(g > 0 for g in relevant.values())))
    logger.info("live KB %s: %d queries, %d judged", kb.name, len(judgments.queries), judged)
    return EvalReport(
        dataset=kb.name, queries_loaded=len(judgments.queries), queries_judged=judged,
        k=options.k, ks=ks, channel_k=runner.channel_k, depth=runner.depth, index=None,
        embedder=EmbedderRates(model_id=container.embedder.model_id,
                               batch_size=container.settings.embedding_batch_size,
                               embedded=None, alone_per_s=None, sample=0),
        results=runs.results, stages=runs.stages, run_files=runs.run_files, fusion=runs.fusion,
        live=live,
    )
