"""`ragsift tune`: fit one knowledge base's fusion settings to its own labels, cross-validated.

The channel lists of every labelled query are searched once; every configuration of a small
grid is fused offline from them. The configuration kept is the best on all queries; the gain
reported is the k-fold held-out one (pick on k-1 folds, score on the last), so it is not the
grid's best case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import Document, KnowledgeBase
from ragsift.domain.tuning import TunedFusion
from ragsift.evaluation.datasets import EvalQuery, Qrels
from ragsift.evaluation.fusion_tuning import (
    CrossValidation,
    FusionConfig,
    collect_lists,
    cross_validate,
    score,
)
from ragsift.ports import Embedder, SearchIndex

TUNING_METRICS = tuple(f"{name}@{k}" for name in ("ndcg", "recall", "mrr", "precision")
                       for k in (10, 100))
# The dense weight stays 1: only the ratio counts. Weight 0 (convex fusions only) is dense order.
SPARSE_WEIGHTS = (0.0, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5)
CHANNEL_KS = (20, 50, 100)
RRF_KS = (20, 60)


def resolve_labels(
    qrels: Qrels, documents: Sequence[Document], chunk_documents: Mapping[str, str]
) -> tuple[Qrels, list[str]]:
    """Judgments keyed by document id, and the label keys that name nothing in the KB.

    A key may be a document id, a filename held by exactly one document, or a chunk id (judged
    at its document, like every evaluation here). Grades of keys that resolve to the same
    document keep the highest.
    """
    ids = {d.id for d in documents}
    by_name: dict[str, list[str]] = {}
    for document in documents:
        by_name.setdefault(document.filename, []).append(document.id)
    resolved: Qrels = {}
    unknown: list[str] = []
    for query_id, relevant in qrels.items():
        grades: dict[str, int] = {}
        for key, grade in relevant.items():
            if key in ids:
                doc_id = key
            elif len(by_name.get(key, ())) == 1:
                doc_id = by_name[key][0]
            elif key in chunk_documents:
                doc_id = chunk_documents[key]
            else:
                unknown.append(key)
                continue
            grades[doc_id] = max(grade, grades.get(doc_id, grade))
        resolved[query_id] = grades
    return resolved, unknown


def tuning_grid(baseline: FusionConfig) -> list[FusionConfig]:
    """The three fusions over sparse weights, equal widths and RRF k; the baseline included.

    Equal widths, because a request has one channel_k: what is tuned must be servable as is.
    """
    configs: list[FusionConfig] = []
    for width in CHANNEL_KS:
        for weight in SPARSE_WEIGHTS:
            configs.append(FusionConfig("weighted", 1.0, weight, width, width))
            configs.append(FusionConfig("zscore", 1.0, weight, width, width))
            if weight > 0:
                configs.extend(FusionConfig("rrf", 1.0, weight, width, width, k) for k in RRF_KS)
    if baseline not in configs:
        configs.append(baseline)
    return configs


def baseline_config(settings: Settings) -> FusionConfig:
    """What the KB's searches use today without tuning (the settings' fusion defaults)."""
    return FusionConfig(settings.fusion, settings.dense_weight, settings.sparse_weight,
                        settings.channel_k, settings.channel_k, settings.rrf_k)


def _method(config: FusionConfig) -> Literal["rrf", "weighted", "zscore"]:
    if config.method not in ("rrf", "weighted", "zscore"):
        raise ValueError(f"not a fusion: {config.method}")
    return config.method  # type: ignore[return-value]  # checked just above


@dataclass(frozen=True, slots=True)
class TuningResult:
    tuned: TunedFusion
    cross_validation: CrossValidation
    best: tuple[tuple[str, float], ...]  # the top configurations on every query, best first


class FusionTuner:
    """Fits fusion weight, method, channel width and RRF k of one KB to labelled queries."""

    def __init__(
        self, index: SearchIndex, embedder: Embedder, settings: Settings, folds: int = 5,
        metric: str = "ndcg@10",
    ) -> None:
        if folds < 2:
            raise InvalidInput("cross-validation needs at least 2 folds")
        if metric not in TUNING_METRICS:
            raise InvalidInput(f"metric must be one of {', '.join(TUNING_METRICS)}")
        self._index = index
        self._embedder = embedder
        self._settings = settings
        self._folds = folds
        self._metric = metric

    def tune(
        self, kb: KnowledgeBase, queries: Sequence[EvalQuery], qrels: Qrels
    ) -> TuningResult:
        """Search each judged query once, fuse every configuration, cross-validate the choice.

        `qrels` must already be keyed by document id (see resolve_labels).
        """
        judged = [q for q in queries if any(g > 0 for g in qrels.get(q.id, {}).values())]
        if len(judged) < 2 * self._folds:
            raise InvalidInput(
                f"{len(judged)} judged queries: tuning with {self._folds} folds needs at least "
                f"{2 * self._folds} queries with a relevant document in the knowledge base"
            )
        baseline = baseline_config(self._settings)
        configs = tuning_grid(baseline)
        depth = max(max(CHANNEL_KS), baseline.dense_k)
        lists = collect_lists(self._index, self._embedder, kb.id, judged, depth)
        # Hits are judged at their document: the "corpus id" of a document is its own id.
        corpus_of = {hit.document_id: hit.document_id for pair in lists.values()
                     for ranked in pair for hit in ranked.hits}
        scored = sorted(
            ((score(lists, qrels, corpus_of, c)[self._metric], c) for c in configs),
            key=lambda pair: -pair[0],
        )
        best_score, best = scored[0]
        cv = cross_validate(lists, qrels, corpus_of, configs, baseline, self._folds,
                            self._metric)
        tuned = TunedFusion(
            kb_id=kb.id, fusion=_method(best),
            dense_weight=best.dense_weight, sparse_weight=best.sparse_weight,
            channel_k=best.dense_k, rrf_k=best.rrf_k, metric=self._metric,
            queries=len(judged), folds=self._folds, baseline=baseline.label,
            baseline_score=score(lists, qrels, corpus_of, baseline)[self._metric],
            tuned_score=best_score, cv_gain=cv.gain, cv_gain_spread=cv.gain_spread,
            tuned_at=datetime.now(UTC),
        )
        return TuningResult(tuned, cv, tuple((c.label, s) for s, c in scored[:5]))
