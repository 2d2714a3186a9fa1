"""Progress callbacks the evaluation reports through, so library code never draws on a terminal."""

from __future__ import annotations

from collections.abc import Callable

Advance = Callable[[int], None]
"""Called with how many items were just done."""

ProgressFactory = Callable[[str, int], Advance]
"""Starts a task (description, total items) and returns its Advance."""


def no_progress(_description: str, _total: int) -> Advance:
    """A ProgressFactory that reports nothing."""
    return lambda _done: None
