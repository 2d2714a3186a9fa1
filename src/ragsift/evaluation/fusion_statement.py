"""Which fusion an evaluation's numbers come from, stated in every output.

RAGSIFT_USE_TUNED_FUSION makes searches use a KB's `ragsift tune` fit; an evaluation must not
report those numbers under the name of the default, so it says which one ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.config import Settings
from ragsift.domain.requests import Fusion
from ragsift.domain.tuning import TunedFusion
from ragsift.evaluation.runner import FusionSource, RunConfig

ENV = "RAGSIFT_USE_TUNED_FUSION"


def settings_label(settings: Settings, channel_k: int, method: Fusion | None = None) -> str:
    """The settings' fusion (or `method` with the settings' weights) as `ragsift tune` labels it."""
    fusion = method or settings.fusion
    text = (f"{fusion} w={settings.dense_weight:g}/{settings.sparse_weight:g} "
            f"channel_k={channel_k}")
    return text + (f" k={settings.rrf_k}" if fusion == "rrf" else "")


@dataclass(frozen=True)
class FusionStatement:
    """The headline configuration's fusion, and whether a tuned fit exists and is used."""

    source: FusionSource | None  # None: the headline configuration fuses nothing
    headline: str  # the configuration the statement is about
    label: str  # its fusion: method, weights, width (and RRF k)
    use_tuned_fusion: bool
    tuned: TunedFusion | None  # the KB's stored fit, used or not
    named_by_flag: bool  # --fusion named the method

    def line(self) -> str:
        """One line for the text and markdown outputs."""
        tuned = self.tuned
        if self.source == "tuned" and tuned is not None:
            return (f"fusion: tuned for this KB ({self.label}; held-out {tuned.metric} "
                    f"{tuned.cv_gain:+.3f} over {tuned.baseline}), {ENV}=true")
        if self.source is None:
            text = f"fusion: none ({self.headline} is one channel)"
        elif self.source == "default":
            text = f"fusion: default ({self.label})"
        else:
            text = f"fusion: named by the evaluation ({self.label}, weights from the settings)"
        if tuned is not None and self.use_tuned_fusion and self.named_by_flag:
            text += f"; this KB's tuned fusion ({tuned.label}) is not used: --fusion names one"
        elif tuned is not None and not self.use_tuned_fusion:
            text += f"; this KB's tuned fusion ({tuned.label}) is not used: {ENV}=false"
        elif tuned is None and self.use_tuned_fusion:
            text += f"; {ENV}=true, but this KB was never tuned"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "config": self.headline, "label": self.label,
            "use_tuned_fusion": self.use_tuned_fusion,
            "tuned": None if self.tuned is None else self.tuned.model_dump(mode="json"),
        }


def headline_config(configs: Sequence[RunConfig]) -> RunConfig:
    """The configuration a single run reports: the tuned one, else the default hybrid one."""
    for source in ("tuned", "default"):
        for config in configs:
            if config.fusion_source == source:
                return config
    hybrid = [c for c in configs if c.mode == "hybrid"]
    return hybrid[-1] if hybrid else configs[0]


def state_fusion(
    configs: Sequence[RunConfig], settings: Settings, tuned: TunedFusion | None, channel_k: int,
    depth: int, named_by_flag: bool,
) -> FusionStatement:
    """What the headline configuration of `configs` fuses with; `channel_k` as requested."""
    config = headline_config(configs)
    if config.fusion_source == "tuned" and tuned is not None:
        label, width = tuned.label, tuned.channel_k
    elif config.fusion_source is not None:
        label, width = settings_label(settings, channel_k, config.fusion), channel_k
    else:
        label, width = "-", depth
    if depth > width:  # the service widens each channel to cover top_k
        label += f" (each channel widened to {depth} for top_k {depth})"
    return FusionStatement(source=config.fusion_source, headline=config.name, label=label,
                           use_tuned_fusion=settings.use_tuned_fusion, tuned=tuned,
                           named_by_flag=named_by_flag)
