"""Per-request options: the request's overrides on top of the settings' defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ragsift.config import Settings
from ragsift.domain.requests import Fusion, Mode, SearchRequest
from ragsift.domain.trace import Switches

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
    auto_merge_threshold: int
    small2big_window: int
    small2big_budget: int


def resolve_options(request: SearchRequest, settings: Settings) -> Options:
    """Request values where given, settings otherwise; candidate_k grows to cover top_k."""
    top_k = _pick(request.top_k, settings.top_k)
    candidate_k = max(_pick(request.candidate_k, settings.candidate_k), top_k)
    return Options(
        mode=_pick(request.mode, settings.mode),
        top_k=top_k,
        candidate_k=candidate_k,
        channel_k=max(_pick(request.channel_k, settings.channel_k), candidate_k),
        fusion=_pick(request.fusion, settings.fusion),
        rrf_k=_pick(request.rrf_k, settings.rrf_k),
        weights={
            "dense": _pick(request.dense_weight, settings.dense_weight),
            "sparse": _pick(request.sparse_weight, settings.sparse_weight),
        },
        switches=Switches(
            rewrite=_pick(request.rewrite, settings.rewrite),
            rerank=_pick(request.rerank, settings.rerank),
            small2big=_pick(request.small2big, settings.small2big),
            auto_merge=_pick(request.auto_merge, settings.auto_merge),
        ),
        min_score=request.min_score if request.min_score is not None else settings.min_score,
        auto_merge_threshold=settings.auto_merge_threshold,
        small2big_window=settings.small2big_window,
        small2big_budget=settings.small2big_budget_tokens,
    )
