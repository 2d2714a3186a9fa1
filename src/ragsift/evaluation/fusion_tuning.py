"""Fusion tuning on labelled queries: channel lists are fetched once, fused offline many ways.

Every configuration is scored on the same dense and sparse lists, so a grid of weights, RRF k
and per-channel widths costs one search per query and channel, not one per configuration.
Cross-validation picks the best configuration on training folds and scores it on the held-out
fold, so the reported gain is not the grid's best case.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import RankedList
from ragsift.evaluation.datasets import EvalQuery, Qrels
from ragsift.evaluation.metrics import evaluate_run, mean_metrics
from ragsift.ports import Embedder, SearchIndex
from ragsift.retrieval.fusion import fuse, rrf

ChannelLists = dict[str, tuple[RankedList, RankedList]]  # query id -> (dense, sparse)


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """One way to fuse: method, per-channel weight and width (hits kept per channel), RRF k."""

    method: str  # "rrf" | "weighted" | "zscore" | "dense" | "sparse"
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    dense_k: int = 100
    sparse_k: int = 100
    rrf_k: int = 60

    @property
    def label(self) -> str:
        if self.method in ("dense", "sparse"):
            return self.method
        return (f"{self.method} w={self.dense_weight:g}/{self.sparse_weight:g} "
                f"widths={self.dense_k}/{self.sparse_k}"
                + (f" k={self.rrf_k}" if self.method == "rrf" else ""))


def collect_lists(
    index: SearchIndex, embedder: Embedder, kb_id: str, queries: Sequence[EvalQuery], depth: int
) -> ChannelLists:
    """The dense and sparse top-`depth` lists of every query, searched once."""
    scope = SearchFilter(kb_id=kb_id)
    lists: ChannelLists = {}
    for query in queries:
        dense = index.search_dense(embedder.embed_query(query.text), scope, depth)
        sparse = index.search_sparse(query.text, scope, depth)
        lists[query.id] = (
            RankedList(name="dense:original", hits=tuple(dense)),
            RankedList(name="sparse:original", hits=tuple(sparse)),
        )
    return lists


def fused_documents(
    pair: tuple[RankedList, RankedList], config: FusionConfig, corpus_of: Mapping[str, str],
    depth: int = 100,
) -> list[str]:
    """Corpus ids in fused order, each at its first chunk, at most `depth`."""
    dense = RankedList(name=pair[0].name, hits=pair[0].hits[: config.dense_k])
    sparse = RankedList(name=pair[1].name, hits=pair[1].hits[: config.sparse_k])
    weights = {"dense": config.dense_weight, "sparse": config.sparse_weight}
    if config.method == "dense":
        fused = rrf([dense])
    elif config.method == "sparse":
        fused = rrf([sparse])
    else:
        fused = fuse(config.method, [dense, sparse], k=config.rrf_k, weights=weights)
    ranked: dict[str, None] = {}
    for hit in fused:
        corpus_id = corpus_of.get(hit.document_id)
        if corpus_id is not None:
            ranked.setdefault(corpus_id, None)
        if len(ranked) >= depth:
            break
    return list(ranked)


def score(
    lists: ChannelLists, qrels: Qrels, corpus_of: Mapping[str, str], config: FusionConfig,
    query_ids: Sequence[str] | None = None, ks: Sequence[int] = (10, 100),
) -> dict[str, float]:
    """Mean metrics of `config` over `query_ids` (default: every query with lists)."""
    ids = list(lists) if query_ids is None else list(query_ids)
    run = {qid: fused_documents(lists[qid], config, corpus_of) for qid in ids}
    return mean_metrics(evaluate_run(run, {q: qrels[q] for q in ids if q in qrels}, ks))


def grid(
    methods: Sequence[str] = ("rrf", "weighted", "zscore"),
    sparse_weights: Sequence[float] = (0.3, 0.5, 0.7, 1.0),
    widths: Sequence[int] = (20, 50, 100),
    rrf_ks: Sequence[int] = (20, 60),
) -> list[FusionConfig]:
    """Dense weight fixed at 1: only the ratio matters for both fusions."""
    configs = [FusionConfig("dense"), FusionConfig("sparse")]
    for method, weight, dense_k, sparse_k in itertools.product(
        methods, sparse_weights, widths, widths
    ):
        for k in rrf_ks if method == "rrf" else (60,):
            configs.append(FusionConfig(method, 1.0, weight, dense_k, sparse_k, k))
    return configs


@dataclass(frozen=True, slots=True)
class CrossValidation:
    metric: str
    folds: int
    held_out: tuple[float, ...]  # best-on-train config, scored on each held-out fold
    baseline: tuple[float, ...]  # the baseline config on the same folds
    chosen: tuple[str, ...]

    @property
    def gain(self) -> float:
        return statistics.fmean(self.held_out) - statistics.fmean(self.baseline)

    @property
    def gain_spread(self) -> float:
        diffs = [a - b for a, b in zip(self.held_out, self.baseline, strict=True)]
        return statistics.stdev(diffs) if len(diffs) > 1 else 0.0


def cross_validate(
    lists: ChannelLists, qrels: Qrels, corpus_of: Mapping[str, str],
    configs: Sequence[FusionConfig], baseline: FusionConfig, folds: int = 5,
    metric: str = "ndcg@10", seed: int = 13,
) -> CrossValidation:
    """k-fold CV of choosing the best config on k-1 folds; scored on the held-out fold."""
    ids = sorted(qid for qid in lists if qid in qrels)
    random.Random(seed).shuffle(ids)
    parts = [ids[i::folds] for i in range(folds)]
    held, base, chosen = [], [], []
    for i, test in enumerate(parts):
        train = [qid for j, part in enumerate(parts) if j != i for qid in part]
        best = max(configs, key=lambda c: score(lists, qrels, corpus_of, c, train)[metric])
        held.append(score(lists, qrels, corpus_of, best, test)[metric])
        base.append(score(lists, qrels, corpus_of, baseline, test)[metric])
        chosen.append(best.label)
    return CrossValidation(metric, folds, tuple(held), tuple(base), tuple(chosen))
