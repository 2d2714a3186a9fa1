"""Knowledge-base versions: what a KB gets on its first change (`ragsift kb version config` changes
it per KB)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragsift.config.concern import Concern


class VersionSettings(Concern):
    """Knowledge-base versions."""

    kb_publish_mode: Literal["auto", "staged"] = Field(
        default="auto",
        description="what a KB gets on its first change: auto = every change is published as "
        "a new active version at once; staged = changes wait in a draft until "
        "sealed and activated",
    )
    kb_version_retention: int = Field(
        default=1, ge=1,
        description="sealed versions a KB keeps (the newest ones, plus the active one); "
        "older ones are garbage-collected. 1 keeps no history: a deleted document is gone "
        "at once. Raise it to roll back and compare versions",
    )
