"""One evaluation end to end: index the corpus (or reuse it), run each configuration, report."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ragsift.bootstrap import Container, build_embedder
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.requests import Fusion, Mode
from ragsift.evaluation.corpus_index import CorpusIndexer, measure_embedder, passage_text
from ragsift.evaluation.datasets import EvalDataset, EvalQuery, Qrels
from ragsift.evaluation.fusion_statement import FusionStatement, headline_config, state_fusion
from ragsift.evaluation.metrics import DEFAULT_KS
from ragsift.evaluation.progress import ProgressFactory, no_progress
from ragsift.evaluation.report import EmbedderRates, EvalReport, run_paths, write_trec_run
from ragsift.evaluation.runner import (
    MAX_TOP_K,
    ConfigResult,
    EvalRunner,
    RunConfig,
    configs_for,
)
from ragsift.ingestion.chunking import Chunker
from ragsift.retrieval.channels import second_dense_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalOptions:
    """What to run: the configurations, k, the corpus layout and the optional stages."""

    mode: Mode = "hybrid"
    fusion: Fusion | None = None  # None: the settings' fusion, or the KB's tuned one if in use
    ablation: bool = False
    k: int = 10
    chunk: bool = False
    channel_k: int | None = None  # None: the settings' channel_k
    dump_run: Path | None = None
    disable_rewrite: bool = False
    disable_rerank: bool = False
    enable_auto_merge: bool = False  # parents replace 2+ sibling hits (changes the ranking)
    # Small2Big with its database reads: the ranking is unchanged, its cost is measured
    enable_parent_expansion: bool = False
    write_batch: int = 512
    embedder_sample: int = 128
    kb_version: int | None = None  # a retained version of the eval KB (None: the active one)


@dataclass(frozen=True, slots=True)
class StageSwitches:
    rewrite: bool
    rerank: bool
    auto_merge: bool
    consistency: bool = False
    small2big: bool = False  # --enable-parent-expansion  # RAGSIFT_CONSISTENCY_RESCORING
    second_dense: bool = False  # the index has a second dense channel (RAGSIFT_SECOND_DENSE)


def stage_switches(settings: Settings, options: EvalOptions) -> StageSwitches:
    """Rewrite and rerank run when a server is configured and not disabled."""
    return StageSwitches(
        rewrite=bool(settings.llm_base_url) and settings.rewrite and not options.disable_rewrite,
        rerank=settings.reranker != "none" and settings.rerank and not options.disable_rerank,
        auto_merge=options.enable_auto_merge,
        consistency=settings.consistency_rescoring,
        small2big=options.enable_parent_expansion,
    )


def stage_notes(switches: StageSwitches, options: EvalOptions) -> dict[str, str]:
    """How each optional stage figured in the numbers."""
    rewrite = "on (RAGSIFT_LLM_BASE_URL)" if switches.rewrite else (
        "off (--disable-rewrite)" if options.disable_rewrite else "off: no rewriter configured")
    rerank = "on (RAGSIFT_RERANKER)" if switches.rerank else (
        "off (--disable-rerank)" if options.disable_rerank else "off: no reranker configured")
    merge = ("on (--enable-auto-merge): parents replace 2+ sibling hits" if switches.auto_merge
             else "off: hits are the indexed chunks")
    expansion = ("on (--enable-parent-expansion): Small2Big reads each hit's context from the "
                 "database (ranking unchanged; latency includes it)" if switches.small2big
                 else "off: no context is read")
    consistency = ("on (RAGSIFT_CONSISTENCY_RESCORING)" if switches.consistency
                   else "off (RAGSIFT_CONSISTENCY_RESCORING)")
    second = ("on: searched for the queries RAGSIFT_SECOND_DENSE_QUERIES names"
              if switches.second_dense else "none (RAGSIFT_SECOND_DENSE, the `use` extra)")
    return {"rewrite": rewrite, "rerank": rerank, "auto_merge": merge,
            "parent_expansion": expansion,
            "consistency": consistency, "second_dense": second}


def ablation_configs(
    configs: tuple[RunConfig, ...], switches: StageSwitches, ablation: bool
) -> tuple[RunConfig, ...]:
    """`configs` with the stage switches; the ablation adds each configured stage turned off,
    and the consistency re-scoring turned on where the settings leave it off."""
    on = tuple(
        replace(c, rewrite=switches.rewrite, rerank=switches.rerank,
                auto_merge=switches.auto_merge, consistency=switches.consistency,
                small2big=switches.small2big)
        for c in configs
    )
    if not ablation:
        return on
    extra = []
    # stages are switched off one at a time on the headline hybrid (tuned, else the default)
    base = headline_config(on)
    if switches.rewrite:
        extra.append(replace(base, name=f"{base.name}-no-rewrite", rewrite=False))
    if switches.rerank:
        extra.append(replace(base, name=f"{base.name}-no-rerank", rerank=False))
    if switches.auto_merge:
        extra.append(replace(base, name=f"{base.name}-no-auto-merge", auto_merge=False))
    # an off-by-default stage is measured by turning it on (e.g. hybrid-zscore-consistency)
    if switches.consistency:
        extra.append(replace(base, name=f"{base.name}-no-consistency", consistency=False))
    else:
        extra.append(replace(base, name=f"{base.name}-consistency", consistency=True))
    if switches.second_dense:  # searched for every query (by default only cross-lingual ones)
        extra.append(replace(base, name=f"{base.name}-second-dense", second_dense=True))
    return on + tuple(extra)


def kb_name(dataset: str, chunk: bool) -> str:
    """The knowledge base an evaluation corpus lives in; chunked and whole passages differ."""
    return f"eval-{dataset}-chunked" if chunk else f"eval-{dataset}"


def _ks(k: int) -> tuple[int, ...]:
    if not 1 <= k <= MAX_TOP_K:
        raise InvalidInput(f"--k must be between 1 and {MAX_TOP_K}, got {k}")
    return tuple(sorted({*DEFAULT_KS, k}))


def _indexer(container: Container, options: EvalOptions) -> CorpusIndexer:
    settings = container.settings
    chunker = None
    layout = "passage"
    if options.chunk:
        chunker = Chunker(container.embedder, chunk_tokens=settings.chunk_tokens,
                          overlap_tokens=settings.chunk_overlap_tokens,
                          parent_max_tokens=settings.parent_max_tokens,
                          sections=settings.chunk_sections)
        layout = (f"chunked:{settings.chunk_tokens}/{settings.chunk_overlap_tokens}"
                  f"/{settings.parent_max_tokens}")
    return CorpusIndexer(container.repository, container.index, container.embedder,
                         chunker=chunker, layout=layout,
                         embed_batch=settings.embedding_batch_size,
                         write_batch=options.write_batch)


def _embedder_alone(container: Container, texts: list[str]) -> float | None:
    """The configured embedder's own rate on `texts`, through a fresh instance (no cache)."""
    if not texts:
        return None
    raw = build_embedder(container.settings)
    try:
        return measure_embedder(raw, texts, container.settings.embedding_batch_size)
    finally:
        close = getattr(raw, "close", None)
        if callable(close):
            close()


def check_options(options: EvalOptions) -> tuple[int, ...]:
    """The k values to score; InvalidInput on a bad k or channel_k."""
    if options.channel_k is not None and options.channel_k < 1:
        raise InvalidInput("--channel-k must be at least 1")
    return _ks(options.k)


@dataclass(frozen=True)
class ConfigRuns:
    """Every configuration's result, the run files written and the fusion statement."""

    results: tuple[ConfigResult, ...]
    run_files: dict[str, str]
    fusion: FusionStatement
    stages: dict[str, str]


def run_configs(
    container: Container, runner: EvalRunner, kb_id: str, queries: Sequence[EvalQuery],
    qrels: Qrels, options: EvalOptions, progress: ProgressFactory,
    chunk_qrels: Qrels | None = None,
) -> ConfigRuns:
    """The configurations the options and the KB's tuned fusion call for, each run once."""
    settings = container.settings
    tuned = container.repository.get_tuned_fusion(kb_id)
    in_effect = settings.use_tuned_fusion and tuned is not None
    switches = stage_switches(settings, options)
    if second_dense_of(container.index) is not None:
        switches = replace(switches, second_dense=True)
    configs = ablation_configs(
        configs_for(options.mode, options.fusion, options.ablation, settings.fusion, in_effect),
        switches, options.ablation,
    )
    statement = state_fusion(configs, settings, tuned, options.channel_k or settings.channel_k,
                             runner.depth, named_by_flag=options.fusion is not None)
    if in_effect:
        logger.info("%s: %s", kb_id, statement.line())
    results = tuple(runner.run(c, queries, qrels, progress, chunk_qrels) for c in configs)
    run_files: dict[str, str] = {}
    if options.dump_run is not None:
        paths = run_paths(options.dump_run, [c.name for c in configs])
        for result in results:
            path = paths[result.config.name]
            write_trec_run(path, result, f"ragsift-{result.config.name}")
            run_files[result.config.name] = str(path)
    return ConfigRuns(results, run_files, statement, stage_notes(switches, options))


def evaluate(
    container: Container, dataset: EvalDataset, options: EvalOptions,
    progress: ProgressFactory = no_progress,
) -> EvalReport:
    """Build or reuse the corpus index, run each configuration, write run files if asked."""
    ks = check_options(options)
    kb = container.ingestion.ensure_kb(kb_name(dataset.name, options.chunk))
    misses = container.embedder.misses
    build = _indexer(container, options).build(kb, dataset.corpus, progress)
    embedded = container.embedder.misses - misses
    sample = [passage_text(p) for p in dataset.corpus[: options.embedder_sample]]
    alone = _embedder_alone(container, sample) if build.built else None
    logger.info("index %s: built %d, reused %d, %.1fs", kb.name, build.built, build.reused,
                build.seconds)
    corpus_ids = {
        doc.id: str(doc.metadata.get("corpus_id", doc.filename))
        for doc in container.repository.list_documents(kb.id)
    }
    depth = min(MAX_TOP_K, max(ks) * (2 if options.chunk else 1))
    runner = EvalRunner(container.retrieval, kb.id, corpus_ids, ks=ks,
                        channel_k=options.channel_k or container.settings.channel_k,
                        depth=depth, kb_version=options.kb_version)
    runs = run_configs(container, runner, kb.id, dataset.queries, dataset.qrels, options,
                       progress)
    return EvalReport(
        dataset=dataset.name, queries_loaded=len(dataset.queries),
        queries_judged=dataset.judged_queries(), k=options.k, ks=ks,
        channel_k=runner.channel_k, depth=runner.depth, index=build,
        embedder=EmbedderRates(
            model_id=container.embedder.model_id,
            batch_size=container.settings.embedding_batch_size, embedded=embedded,
            alone_per_s=alone, sample=len(sample) if alone is not None else 0,
        ),
        results=runs.results, stages=runs.stages, run_files=runs.run_files, fusion=runs.fusion,
    )
