"""Progress callbacks the evaluation reports through, so library code never draws on a terminal."""

from __future__ import annotations

import time
from collections.abc import Callable

Advance = Callable[[int], None]
"""Called with how many items were just done."""

ProgressFactory = Callable[[str, int], Advance]
"""Starts a task (description, total items) and returns its Advance."""


def no_progress(_description: str, _total: int) -> Advance:
    """A ProgressFactory that reports nothing."""
    return lambda _done: None


def _duration(seconds: float) -> str:
    """A short human duration: 45s, 8m, 2h05m."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m"


class _LineTask:
    """One task's counters; writes a line when the interval or the percent step has passed."""

    def __init__(self, owner: LineProgress, description: str, total: int) -> None:
        self._owner = owner
        self._description = description
        self._total = total
        self._done = 0
        self._started = owner.clock()
        self._last_time = self._started
        self._last_done = 0

    def advance(self, done: int) -> None:
        self._done += done
        now = self._owner.clock()
        finished = self._total > 0 and self._done >= self._total
        step = self._owner.percent_step
        stepped = (step > 0 and self._total > 0
                   and (self._done - self._last_done) * 100 >= step * self._total)
        if finished or stepped or now - self._last_time >= self._owner.interval_s:
            self._last_time, self._last_done = now, self._done
            self._owner.write(self._line(now))

    def _line(self, now: float) -> str:
        elapsed = now - self._started
        text = f"eval: {self._description} {self._done:,}/{self._total:,}"
        if self._total > 0:
            text += f" ({self._done * 100 // self._total}%)"
        if elapsed > 0 and self._done:
            rate = self._done / elapsed
            text += f", {rate:.1f}/s"
            if self._done < self._total:
                text += f", eta {_duration((self._total - self._done) / rate)}"
            else:
                text += f", {_duration(elapsed)}"
        return text


class LineProgress:
    """A ProgressFactory for logs: plain lines, every `interval_s` or every `percent_step` %.

    For a stderr that is not a terminal (a CI log, `2> file`), where a progress bar shows
    nothing until it ends. A task's last item always writes a line.
    """

    def __init__(
        self, write: Callable[[str], None], interval_s: float, percent_step: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0 or percent_step < 0:
            raise ValueError("interval_s must be positive and percent_step not negative")
        self.write = write
        self.interval_s = interval_s
        self.percent_step = percent_step
        self.clock = clock

    def __call__(self, description: str, total: int) -> Advance:
        return _LineTask(self, description, total).advance
