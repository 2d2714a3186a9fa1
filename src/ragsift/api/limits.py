"""Per-key request rate (token bucket) and concurrency, and a rate for bad-key attempts."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """`rate` requests a second per name, bursts up to `burst`; thread-safe."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, name: str) -> float:
        """0 when a request may go now, else the seconds until it may (nothing is taken)."""
        now = self._clock()
        with self._lock:
            bucket = self._buckets.setdefault(name, _Bucket(self._burst, now))
            bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.updated) * self._rate)
            bucket.updated = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return 0.0
            return (1 - bucket.tokens) / self._rate

    @staticmethod
    def retry_after(wait_s: float) -> str:
        """The Retry-After header value for a wait."""
        return str(max(1, math.ceil(wait_s)))


class Concurrency:
    """At most `limit` requests running per name."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._limit = limit
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    def enter(self, name: str) -> bool:
        with self._lock:
            if self._running.get(name, 0) >= self._limit:
                return False
            self._running[name] = self._running.get(name, 0) + 1
            return True

    def leave(self, name: str) -> None:
        with self._lock:
            left = self._running.get(name, 1) - 1
            if left:
                self._running[name] = left
            else:
                self._running.pop(name, None)
