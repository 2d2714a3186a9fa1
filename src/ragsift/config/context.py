"""The context around a hit: neighbours (small-to-big) and merges into parents and sections."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class ContextSettings(Concern):
    """Context expansion."""

    small2big: bool = Field(
        default=True,
        description="widen each final hit with its neighbours in the same parent "
        "(small-to-big); a request's `small2big` overrides it",
    )
    small2big_window: int = Field(
        default=1, ge=0, le=10,
        description="neighbours on each side of a hit that may join it",
    )
    small2big_budget_tokens: int = Field(
        default=1536, ge=0,
        description="tokens a widened hit may have in all (its own tokens always kept)",
    )
    auto_merge: bool = Field(
        default=False,
        description="merge candidates into their parent (and section) when enough of its "
        "children are among them",
    )
    auto_merge_threshold: int = Field(
        default=2, ge=1, description="children (L3) of one parent among the candidates that "
        "merge into the parent (L2)",
    )
    auto_merge_section_threshold: int = Field(
        default=0, ge=0, description="parents (L2, merged or hit) of one section among the "
        "candidates that merge into the section (L1); 0: no merge into sections (measured in "
        "docs/quality.md)",
    )
