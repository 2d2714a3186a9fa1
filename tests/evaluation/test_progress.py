"""Progress lines for logs: by time, by percent step, and always at the end."""

from __future__ import annotations

import pytest

from ragsift.evaluation.progress import LineProgress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_comes_once_per_interval_and_at_the_last_item() -> None:
    clock, lines = Clock(), []
    advance = LineProgress(lines.append, interval_s=10, clock=clock)("indexing passages", 400)
    for _ in range(399):
        clock.now += 0.125  # 49.875 s in all: lines at 10, 20, 30 and 40 s
        advance(1)
    assert len(lines) == 4
    assert lines[0] == "eval: indexing passages 80/400 (20%), 8.0/s, eta 40s"
    clock.now += 0.125
    advance(1)
    assert lines[-1] == "eval: indexing passages 400/400 (100%), 8.0/s, 50s"


def test_a_percent_step_adds_lines_between_intervals() -> None:
    clock, lines = Clock(), []
    advance = LineProgress(lines.append, interval_s=3600, percent_step=25, clock=clock)(
        "querying hybrid-zscore", 8)
    for _ in range(8):
        clock.now += 1
        advance(1)
    assert [line.split(" ")[3] for line in lines] == ["2/8", "4/8", "6/8", "8/8"]


def test_large_counts_and_long_etas_read_easily() -> None:
    clock, lines = Clock(), []
    advance = LineProgress(lines.append, interval_s=1, clock=clock)("embedding passages", 32172)
    clock.now = 290
    advance(12000)
    assert lines == ["eval: embedding passages 12,000/32,172 (37%), 41.4/s, eta 8m"]
    clock.now = 291
    advance(1)
    clock.now = 10000
    advance(1)
    assert lines[-1].endswith("eta 4h40m")


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        LineProgress(print, interval_s=0)
