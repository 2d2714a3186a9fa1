"""The base of each concern's settings (storage, index, ...), which `Settings` inherits.

A concern is never validated alone in a running ragsift: `Settings` builds one schema of all
fields. So a concern's own schema is built only if something asks for it (a test), not when
its module loads: building all twenty cost ~35 ms of every command's start (issue 39).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Concern(BaseModel):
    """A group of settings fields; its validation schema is built on first use."""

    model_config = ConfigDict(defer_build=True)
