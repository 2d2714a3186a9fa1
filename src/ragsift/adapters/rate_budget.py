"""A requests- and tokens-per-window budget that concurrent callers of one provider share.

Hosted embedders limit requests per minute (RPM) and tokens per minute (TPM) and answer 429
past them. Rather than learn the limits from refusals, an ingest keeps under them itself: a
request is admitted when, with it, no window of `window_s` holds more requests or tokens than
the budget allows.

A request counts from its admission until `window_s` after it finished (answered or failed),
not after it was sent: the provider's clock sees it arrive somewhere in between, so whatever
the network delay, no window of the provider's holds more than the budget. The cost is a
request's latency per window (150 ms in 60 s: 0.25 %).

A 429's Retry-After pauses every admission (`pause`): the other workers would only collect
429s of their own meanwhile.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

Clock = Callable[[], float]


class BudgetWaitTooLong(Exception):
    """The budget cannot admit a request within the time its caller may wait."""


@dataclass(slots=True)
class _Entry:
    tokens: int
    done_at: float | None = None  # None: in flight


class Reservation:
    """One admitted request's place in the budget; `finish` when its answer (or failure) is in.

    A context manager: leaving the block finishes it, if the block did not.
    """

    def __init__(self, budget: RateBudget, entry: _Entry | None) -> None:
        self._budget = budget
        self._entry = entry

    def finish(self, tokens: int | None = None) -> None:
        """The request is over; `tokens`: what the provider counted, when it said (the
        estimate is kept otherwise). Later calls change nothing."""
        if self._entry is not None:
            self._budget._finish(self._entry, tokens)
            self._entry = None

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.finish()


class RateBudget:
    """At most `requests` requests and `tokens` tokens in any window of `window_s` seconds
    (None: that one unlimited); shared by threads. `clock` is injectable for tests."""

    def __init__(
        self, requests: int | None = None, tokens: int | None = None, window_s: float = 60.0,
        clock: Clock = time.monotonic,
    ) -> None:
        if requests is not None and requests < 1:
            raise ValueError(f"a requests budget must be at least 1, got {requests}")
        if tokens is not None and tokens < 1:
            raise ValueError(f"a tokens budget must be at least 1, got {tokens}")
        if not window_s > 0:
            raise ValueError(f"a budget window must be positive, got {window_s}")
        self._requests = requests
        self._tokens = tokens
        self._window_s = window_s
        self._clock = clock
        self._entries: list[_Entry] = []
        self._paused_until = -math.inf
        self._changed = threading.Condition()

    @property
    def limited(self) -> bool:
        return self._requests is not None or self._tokens is not None

    def wait_s(self, tokens: int) -> float:
        """Seconds until a request of `tokens` could be admitted (0: now; inf: not before a
        request in flight finishes). ValueError for more tokens than the whole budget."""
        with self._changed:
            return self._wait_locked(tokens, self._clock())

    def try_acquire(self, tokens: int) -> Reservation | float:
        """A reservation if a request of `tokens` fits now, else the seconds to wait."""
        with self._changed:
            return self._admit_locked(tokens, self._clock())

    def acquire(self, tokens: int, timeout_s: float | None = None) -> Reservation:
        """Wait until a request of `tokens` fits and admit it; BudgetWaitTooLong when that
        would take more than `timeout_s` (None: as long as it takes)."""
        with self._changed:
            deadline = None if timeout_s is None else self._clock() + timeout_s
            while True:
                now = self._clock()
                admitted = self._admit_locked(tokens, now)
                if isinstance(admitted, Reservation):
                    return admitted
                if deadline is not None and now + admitted > deadline:
                    if not math.isinf(admitted) or now >= deadline:
                        raise BudgetWaitTooLong(
                            f"the rate budget admits this request in {admitted:.1f} s, more "
                            f"than the {timeout_s:.1f} s it may wait"
                        )
                    admitted = deadline - now  # in flight ahead of it: wait for a finish
                # a finish wakes waiters early; they recompute their wait
                self._changed.wait(None if math.isinf(admitted) else admitted)

    def pause(self, seconds: float) -> None:
        """Admit nothing for `seconds` from now (a provider's Retry-After)."""
        with self._changed:
            self._paused_until = max(self._paused_until, self._clock() + seconds)

    def _admit_locked(self, tokens: int, now: float) -> Reservation | float:
        wait = self._wait_locked(tokens, now)
        if wait > 0:
            return wait
        if not self.limited:
            return Reservation(self, None)  # nothing to count; pauses still apply
        entry = _Entry(tokens)
        self._entries.append(entry)
        return Reservation(self, entry)

    def _finish(self, entry: _Entry, tokens: int | None) -> None:
        with self._changed:
            entry.done_at = self._clock()
            if tokens is not None:
                entry.tokens = tokens
            self._changed.notify_all()

    def _wait_locked(self, tokens: int, now: float) -> float:
        if tokens < 0:
            raise ValueError(f"a request's tokens must not be negative, got {tokens}")
        if self._tokens is not None and tokens > self._tokens:
            raise ValueError(
                f"a request of {tokens} tokens exceeds the whole budget of {self._tokens} "
                f"tokens per {self._window_s:g} s: embed fewer texts a call"
            )
        self._entries = [e for e in self._entries
                         if e.done_at is None or e.done_at + self._window_s > now]
        wait = max(0.0, self._paused_until - now)
        # finished entries leave the window oldest first; in-flight ones only after finishing
        leaving = sorted((e for e in self._entries if e.done_at is not None),
                         key=lambda e: e.done_at or 0.0)
        if self._requests is not None:
            excess = len(self._entries) + 1 - self._requests
            wait = max(wait, self._until_freed(leaving, excess, lambda e: 1, now))
        if self._tokens is not None:
            excess = sum(e.tokens for e in self._entries) + tokens - self._tokens
            wait = max(wait, self._until_freed(leaving, excess, lambda e: e.tokens, now))
        return wait

    def _until_freed(
        self, leaving: list[_Entry], excess: int, size: Callable[[_Entry], int], now: float
    ) -> float:
        """Seconds until entries leaving the window free `excess` (0 if nothing need go)."""
        if excess <= 0:
            return 0.0
        freed = 0
        for entry in leaving:
            freed += size(entry)
            if freed >= excess:
                assert entry.done_at is not None
                return max(0.0, entry.done_at + self._window_s - now)
        return math.inf
