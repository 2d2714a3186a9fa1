"""Runs the queries of a dataset through RetrievalService per configuration and scores them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from ragsift.domain.errors import InvalidInput
from ragsift.domain.requests import Fusion, Mode, SearchRequest
from ragsift.domain.results import RetrievalHit
from ragsift.evaluation.datasets import EvalQuery, Qrels
from ragsift.evaluation.kb_labels import chunk_ranking
from ragsift.evaluation.metrics import DEFAULT_KS, evaluate_run, mean_metrics
from ragsift.evaluation.progress import Advance, ProgressFactory, no_progress
from ragsift.retrieval.service import RetrievalService

logger = logging.getLogger(__name__)

MAX_TOP_K = 200  # SearchRequest's bound on top_k

FusionSource = Literal["tuned", "default", "request"]
"""Where a hybrid configuration's fusion comes from: the KB's `ragsift tune` fit in full, the
settings (RAGSIFT_FUSION and its weights), or a method the evaluation names (weights from the
settings)."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    """One retrieval configuration; fusion is None for a single channel or a tuned one."""

    name: str
    mode: Mode
    fusion: Fusion | None = None
    rewrite: bool = False
    rerank: bool = False
    auto_merge: bool = False
    small2big: bool = False  # context only: the ranking is the same, the latency is not
    consistency: bool = False  # the consistency re-scoring (asked for explicitly, on or off)
    second_dense: bool | None = None  # the second dense channel; None: the settings' policy
    tuned: bool = False  # search with the KB's tuned fusion: method, weights, width, RRF k
    fusion_source: FusionSource | None = None  # None: a single channel, nothing is fused


ABLATION: tuple[RunConfig, ...] = (
    # e5 alone: the second dense channel (USE) has its own row, hybrid-*-second-dense, and a
    # mixed KB's rule would otherwise add it to "dense"
    RunConfig("dense", "dense", second_dense=False),
    RunConfig("sparse", "sparse"),
    RunConfig("hybrid-rrf", "hybrid", "rrf"),
    RunConfig("hybrid-weighted", "hybrid", "weighted"),
    RunConfig("hybrid-zscore", "hybrid", "zscore"),
)


TUNED = RunConfig("hybrid-tuned", "hybrid", tuned=True, fusion_source="tuned")


def _sourced(config: RunConfig, default_fusion: Fusion) -> RunConfig:
    if config.mode != "hybrid":
        return config
    source: FusionSource = "default" if config.fusion == default_fusion else "request"
    return replace(config, fusion_source=source)


def configs_for(
    mode: Mode, fusion: Fusion | None, ablation: bool, default_fusion: Fusion = "zscore",
    tuned: bool = False,
) -> tuple[RunConfig, ...]:
    """The ablation configurations, or the one that `mode` and `fusion` name.

    `fusion` None is the settings' (`default_fusion`), or the KB's tuned fusion when `tuned`
    (a tuned fit is in effect); the ablation then adds the tuned configuration last.
    """
    if ablation:
        configs = tuple(_sourced(c, default_fusion) for c in ABLATION)
        return (*configs, TUNED) if tuned else configs
    if mode == "hybrid":
        if fusion is None and tuned:
            return (TUNED,)
        method = fusion or default_fusion
        return (_sourced(RunConfig(f"hybrid-{method}", "hybrid", method), default_fusion),)
    # a single channel alone: "dense" is e5 without the second dense channel, as in ABLATION
    return (RunConfig(mode, mode, second_dense=False if mode == "dense" else None),)


@dataclass(frozen=True, slots=True)
class RankedDoc:
    """A corpus document in a run, with the score of its best-ranked chunk."""

    corpus_id: str
    score: float


@dataclass(frozen=True)
class ConfigResult:
    """Runs, per-query and mean metrics, and latencies of one configuration."""

    config: RunConfig
    runs: dict[str, list[RankedDoc]]
    per_query: dict[str, dict[str, float]]
    means: dict[str, float]
    latencies_ms: tuple[float, ...]
    failed_queries: dict[str, str]
    degraded_queries: int
    # chunk-level scores of the queries with chunk labels (a live KB's labels), else empty
    chunk_per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    chunk_means: dict[str, float] = field(default_factory=dict)
    tuned_applied: int = 0  # queries whose trace says the KB's tuned fusion was applied

    def latency_ms(self, percentile: float) -> float | None:
        """A latency percentile (linear interpolation) over the timed queries."""
        if not self.latencies_ms:
            return None
        return float(np.percentile(np.asarray(self.latencies_ms), percentile))


def dedupe_hits(hits: Sequence[RetrievalHit], corpus_ids: Mapping[str, str]) -> list[RankedDoc]:
    """Hits as corpus documents, each at the rank of its first chunk; later chunks dropped."""
    ranked: dict[str, RankedDoc] = {}
    for hit in hits:
        corpus_id = corpus_ids.get(hit.document_id)
        if corpus_id is None:
            logger.warning("hit of unknown document %s ignored", hit.document_id)
            continue
        if corpus_id not in ranked:
            ranked[corpus_id] = RankedDoc(corpus_id, hit.fusion_score)
    return list(ranked.values())


class EvalRunner:
    """Searches one knowledge base with every query and scores the document-level runs."""

    def __init__(
        self,
        retrieval: RetrievalService,
        kb_id: str,
        corpus_ids: Mapping[str, str],
        ks: Sequence[int] = DEFAULT_KS,
        channel_k: int = 100,
        depth: int | None = None,
        kb_version: int | None = None,
    ) -> None:
        self._retrieval = retrieval
        self._kb_id = kb_id
        self._kb_version = kb_version  # None: the active version at each query
        self._corpus_ids = corpus_ids
        self._ks = tuple(sorted(set(ks)))
        self._depth = min(MAX_TOP_K, depth or max(self._ks))
        if self._depth < max(self._ks):
            raise ValueError(f"k can be at most {MAX_TOP_K}")
        self._channel_k = max(channel_k, self._depth)

    @property
    def ks(self) -> tuple[int, ...]:
        return self._ks

    @property
    def channel_k(self) -> int:
        return self._channel_k

    @property
    def depth(self) -> int:
        """Chunks requested per query (top_k)."""
        return self._depth

    def request(self, config: RunConfig, query: str) -> SearchRequest:
        """The search request one query runs with under `config`.

        The tuned fusion is asked for explicitly, on or off, so RAGSIFT_USE_TUNED_FUSION never
        changes a configuration's weights behind its name. A tuned configuration leaves method,
        width and weights to the fit; the service still widens each channel to top_k.
        """
        if config.tuned:
            fusion, channel_k, candidate_k = None, None, self._depth
        else:
            fusion, channel_k = config.fusion or "rrf", self._channel_k
            candidate_k = max(self._depth, self._channel_k)
        return SearchRequest(
            query=query, kb_id=self._kb_id, mode=config.mode, fusion=fusion,
            top_k=self._depth, candidate_k=candidate_k, channel_k=channel_k,
            tuned_fusion=config.tuned, rewrite=config.rewrite, rerank=config.rerank,
            auto_merge=config.auto_merge, consistency=config.consistency,
            second_dense=config.second_dense,
            small2big=config.small2big,
            kb_version=self._kb_version,
        )

    def run(
        self, config: RunConfig, queries: Sequence[EvalQuery], qrels: Qrels,
        progress: ProgressFactory = no_progress, chunk_qrels: Qrels | None = None,
    ) -> ConfigResult:
        """Every query once (after one untimed warm-up query), then the metrics.

        With `chunk_qrels`, the queries they judge are also scored on chunks (chunk_ranking).
        """
        advance = progress(f"querying {config.name}", len(queries))
        labels = chunk_qrels or {}
        runs, chunk_runs, latencies, failed, counts = asyncio.run(
            self._search_all(config, queries, advance, labels))
        ranked = {qid: [doc.corpus_id for doc in docs] for qid, docs in runs.items()}
        per_query = evaluate_run(ranked, qrels, self._ks)
        chunk_per_query = evaluate_run(chunk_runs, labels, self._ks) if labels else {}
        return ConfigResult(
            config=config, runs=runs, per_query=per_query, means=mean_metrics(per_query),
            latencies_ms=tuple(latencies), failed_queries=failed, degraded_queries=counts[0],
            chunk_per_query=chunk_per_query, chunk_means=mean_metrics(chunk_per_query),
            tuned_applied=counts[1],
        )

    async def _search_all(
        self, config: RunConfig, queries: Sequence[EvalQuery], advance: Advance,
        chunk_qrels: Qrels,
    ) -> tuple[dict[str, list[RankedDoc]], dict[str, list[str]], list[float], dict[str, str],
               tuple[int, int]]:
        runs: dict[str, list[RankedDoc]] = {}
        chunk_runs: dict[str, list[str]] = {}
        latencies: list[float] = []
        failed: dict[str, str] = {}
        degraded = tuned = 0
        if queries:  # warm-up: model load and first-search costs stay out of the percentiles
            with contextlib.suppress(InvalidInput):
                await self._retrieval.search(self.request(config, queries[0].text))
        for query in queries:
            started = time.perf_counter()
            try:
                result = await self._retrieval.search(self.request(config, query.text))
            except InvalidInput as exc:  # e.g. a punctuation-only query: it scores zero
                failed[query.id] = str(exc)
                logger.warning("query %s rejected: %s", query.id, exc)
                runs[query.id] = []
            else:
                latencies.append((time.perf_counter() - started) * 1000)
                degraded += bool(result.trace.degradations)
                tuned += result.trace.tuned_fusion.status == "applied"
                runs[query.id] = dedupe_hits(result.hits, self._corpus_ids)
                if query.id in chunk_qrels:
                    chunk_runs[query.id] = chunk_ranking(result.hits, chunk_qrels[query.id])
            advance(1)
        return runs, chunk_runs, latencies, failed, (degraded, tuned)
