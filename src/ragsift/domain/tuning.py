"""Fusion settings fitted to one knowledge base's own labels (`ragsift tune`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class TunedFusion(BaseModel):
    """The fitted configuration and how much it gained, cross-validated on held-out queries.

    Stored with the knowledge base; used only by requests (or settings) that opt in.
    """

    model_config = ConfigDict(frozen=True)

    kb_id: str
    fusion: Literal["rrf", "weighted", "zscore"]
    dense_weight: float = Field(ge=0)
    sparse_weight: float = Field(ge=0)
    channel_k: int = Field(ge=1)
    rrf_k: int = Field(ge=1)
    metric: str
    queries: int = Field(ge=1, description="judged queries it was fitted on")
    folds: int = Field(ge=2)
    baseline: str = Field(description="the configuration the gain is measured against")
    baseline_score: float
    tuned_score: float = Field(description="the chosen configuration on every query (in-sample)")
    cv_gain: float = Field(description="mean held-out gain over the baseline")
    cv_gain_spread: float = Field(description="standard deviation of the per-fold gains")
    tuned_at: datetime

    @property
    def label(self) -> str:
        text = (f"{self.fusion} w={self.dense_weight:g}/{self.sparse_weight:g} "
                f"channel_k={self.channel_k}")
        return text + (f" k={self.rrf_k}" if self.fusion == "rrf" else "")
