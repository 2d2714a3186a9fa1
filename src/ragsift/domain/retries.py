"""Counts the retries of model-server calls made for one stage, so its trace can show them.

A stage opens `counting_retries()` around its call; the HTTP helper calls `note_retry()` before
each retry. The tally travels in a context variable: `asyncio.to_thread` and new tasks copy the
context, and the copy shares the tally object, so retries made in a worker thread are counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(slots=True)
class RetryTally:
    """Retries (attempts after the first) of the calls made while this tally was current."""

    retries: int = 0


_current: ContextVar[RetryTally | None] = ContextVar("ragsift_retry_tally", default=None)


@contextmanager
def counting_retries(tally: RetryTally | None = None) -> Iterator[RetryTally]:
    """Make `tally` (a new one by default) the tally retries are counted in, for the block."""
    current = RetryTally() if tally is None else tally
    token = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(token)


def note_retry() -> None:
    """Count one retry in the current tally; nothing when no stage is counting."""
    tally = _current.get()
    if tally is not None:
        # one stage's calls run one after another, so no lock is needed around the increment
        tally.retries += 1
