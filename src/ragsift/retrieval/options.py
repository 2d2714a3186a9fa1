"""Per-request options: the request's overrides on top of the settings' defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ragsift.config import Settings
from ragsift.domain.requests import Fusion, Mode, SearchRequest
from ragsift.domain.trace import StageTrace, Switches
from ragsift.domain.tuning import TunedFusion

T = TypeVar("T")


def _pick(value: T | None, default: T) -> T:
    return default if value is None else value


@dataclass(frozen=True, slots=True)
class Options:
    mode: Mode
    top_k: int
    candidate_k: int
    channel_k: int
    fusion: Fusion
    rrf_k: int
    weights: dict[str, float]
    switches: Switches
    min_score: float | None
    second_dense: bool | None  # None: the settings' policy decides per query
    auto_merge_threshold: int
    auto_merge_section_threshold: int  # 0: no merge into sections (L1)
    small2big_window: int
    small2big_budget: int
    tuned_fusion: StageTrace
    faq_direct_threshold: float | None = None  # the KB's own; None: the FAQ searcher's


def wants_tuned_fusion(request: SearchRequest, settings: Settings) -> bool:
    """Whether this request opts in to its KB's fitted fusion (`ragsift tune`)."""
    return _pick(request.tuned_fusion, settings.use_tuned_fusion)


def _tuned_stage(wanted: bool, tuned: TunedFusion | None) -> StageTrace:
    if not wanted:
        return StageTrace(status="off", reason="not requested")
    if tuned is None:
        return StageTrace(status="skipped", reason="this knowledge base was never tuned")
    return StageTrace(status="applied", reason=tuned.label, detail={
        "metric": tuned.metric, "cv_gain": round(tuned.cv_gain, 6),
        "cv_gain_spread": round(tuned.cv_gain_spread, 6), "queries": tuned.queries,
    })


def resolve_options(
    request: SearchRequest, settings: Settings, tuned: TunedFusion | None = None
) -> Options:
    """Request values where given, then the KB's tuned fusion when opted in, then settings.

    candidate_k grows to cover top_k, channel_k to cover candidate_k.
    """
    wanted = wants_tuned_fusion(request, settings)
    base = tuned if wanted else None
    top_k = _pick(request.top_k, settings.top_k)
    candidate_k = max(_pick(request.candidate_k, settings.candidate_k), top_k)
    return Options(
        mode=_pick(request.mode, settings.mode),
        top_k=top_k,
        candidate_k=candidate_k,
        channel_k=max(
            _pick(request.channel_k, base.channel_k if base else settings.channel_k), candidate_k
        ),
        fusion=_pick(request.fusion, base.fusion if base else settings.fusion),
        rrf_k=_pick(request.rrf_k, base.rrf_k if base else settings.rrf_k),
        weights={
            "dense": _pick(request.dense_weight,
                           base.dense_weight if base else settings.dense_weight),
            "sparse": _pick(request.sparse_weight,
                            base.sparse_weight if base else settings.sparse_weight),
        },
        switches=Switches(
            rewrite=_pick(request.rewrite, settings.rewrite),
            rerank=_pick(request.rerank, settings.rerank),
            small2big=_pick(request.small2big, settings.small2big),
            auto_merge=_pick(request.auto_merge, settings.auto_merge),
            consistency=_pick(request.consistency, settings.consistency_rescoring),
            feedback=_pick(request.feedback, settings.prf_rm3),
        ),
        min_score=request.min_score if request.min_score is not None else settings.min_score,
        second_dense=request.second_dense,
        auto_merge_threshold=settings.auto_merge_threshold,
        auto_merge_section_threshold=settings.auto_merge_section_threshold,
        small2big_window=settings.small2big_window,
        small2big_budget=settings.small2big_budget_tokens,
        tuned_fusion=_tuned_stage(wanted, tuned),
    )
