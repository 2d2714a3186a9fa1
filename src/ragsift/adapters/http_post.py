"""POSTs to model servers with failures turned into UpstreamError, and the one retry policy.

Every model-server call (embeddings, rerank, rewrite, the opening of a chat stream) retries
here: HTTP 429 / 502 / 503 / 504 and lost connections (refused, reset, closed without an
answer), after the server's Retry-After when it sends one, else after an exponential backoff
with jitter, within a time budget. Other 4xx/5xx answers are final (the same request would get
the same answer), and so are timeouts: a stage's budget is its timeout, already spent by then.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn, TypeVar

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
    wait_exponential,
    wait_random,
)
from tenacity.stop import stop_base

from ragsift.domain.errors import UpstreamError
from ragsift.domain.retries import note_retry
from ragsift.observability.tracing import client_span

logger = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# The request got no answer: refused, reset, or closed before the status line arrived.
_LOST_CONNECTION = (httpx.NetworkError, httpx.RemoteProtocolError)
# Floor of a retry's timeouts, so a retry started just inside the budget is not doomed at once.
_MIN_ATTEMPT_S = 0.05


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and for how long one call may be retried.

    `max_attempts` counts the first attempt. `budget_s` runs from the start of the first
    attempt: no retry is waited for or started past it, and a retry's timeouts are cut to what
    is left of it. Without Retry-After the n-th wait is `backoff_s * 2**(n-1)`, at most
    `backoff_max_s`, plus up to `backoff_s` of jitter.
    """

    max_attempts: int = 3
    backoff_s: float = 0.5
    backoff_max_s: float = 10.0
    budget_s: float = 20.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("retry max_attempts must be at least 1")
        if self.backoff_s < 0 or self.backoff_max_s < 0:
            raise ValueError("retry backoff must not be negative")
        if self.budget_s <= 0:
            raise ValueError("retry budget_s must be positive")


NO_RETRY = RetryPolicy(max_attempts=1)


class RetryableUpstreamError(UpstreamError):
    """A failure worth another attempt; `retry_after_s` is the server's Retry-After, if any."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if unusable.

    Fractional seconds are accepted (some gateways send them); a date in the past means now.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # HTTP dates are GMT; "-0000" parses as naive
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def status_error(
    service: str, status: int, headers: Mapping[str, str], text: str
) -> UpstreamError:
    """The error for an HTTP error answer: retryable for 429/502/503/504, final otherwise."""
    message = f"{service} answered HTTP {status}: {text[:200]}"
    if status in RETRY_STATUSES:
        return RetryableUpstreamError(message, parse_retry_after(headers.get("retry-after")))
    return UpstreamError(message)


def transport_error(exc: httpx.HTTPError, message: str) -> UpstreamError:
    """The error for a transport failure: retryable when the connection was lost."""
    if isinstance(exc, _LOST_CONNECTION):
        return RetryableUpstreamError(message)
    return UpstreamError(message)


def capped_timeout(timeout: httpx.Timeout, time_left: float | None) -> httpx.Timeout:
    """`timeout` with every phase cut to `time_left` (None: unchanged)."""
    if time_left is None:
        return timeout
    left = max(time_left, _MIN_ATTEMPT_S)

    def cap(value: float | None) -> float:
        return left if value is None else min(value, left)

    return httpx.Timeout(
        connect=cap(timeout.connect), read=cap(timeout.read), write=cap(timeout.write),
        pool=cap(timeout.pool),
    )


class _Budget:
    """The time budget of one call, on `clock` from the start of its first attempt."""

    def __init__(self, budget_s: float, clock: Callable[[], float]) -> None:
        self._budget_s = budget_s
        self._clock = clock
        self._started: float | None = None

    def time_left(self) -> float | None:
        """None for the first attempt (its own timeouts apply), else what the budget has left."""
        now = self._clock()
        if self._started is None:
            self._started = now
            return None
        return self._budget_s - (now - self._started)

    def elapsed(self) -> float:
        return 0.0 if self._started is None else self._clock() - self._started

    def spent(self, state: RetryCallState) -> bool:
        """Stop when the coming wait would end at or past the budget (tenacity runs wait first)."""
        return self.elapsed() + (state.upcoming_sleep or 0.0) >= self._budget_s


class _StopWhenSpent(stop_base):
    def __init__(self, budget: _Budget) -> None:
        self._budget = budget

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self._budget.spent(retry_state)


class _Wait:
    """Retry-After when the server sent one, else exponential backoff with jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._backoff = wait_exponential(
            multiplier=policy.backoff_s, max=policy.backoff_max_s
        ) + wait_random(0.0, policy.backoff_s)
        self._jitter_s = policy.backoff_s

    def __call__(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        retry_after = failure.retry_after_s if isinstance(failure, RetryableUpstreamError) else None
        if retry_after is None:
            return float(self._backoff(state))
        # Never earlier than asked; a little later, so clients told the same time spread out.
        return retry_after + random.uniform(0.0, min(self._jitter_s, 0.1 * retry_after))


def _retry_args(policy: RetryPolicy, service: str, budget: _Budget) -> dict[str, Any]:
    def before_sleep(state: RetryCallState) -> None:
        note_retry()
        failure = state.outcome.exception() if state.outcome is not None else None
        logger.warning(  # the failure's message names the service
            "%s; retry %d of at most %d in %.2f s",
            failure, state.attempt_number, policy.max_attempts - 1, state.upcoming_sleep,
        )

    def give_up(state: RetryCallState) -> NoReturn:
        failure = state.outcome.exception() if state.outcome is not None else None
        assert isinstance(failure, UpstreamError)  # only RetryableUpstreamError is retried
        raise UpstreamError(
            f"{failure} (gave up after {state.attempt_number} attempts in "
            f"{budget.elapsed():.1f} s)"
        ) from failure

    return {
        "retry": retry_if_exception_type(RetryableUpstreamError),
        "stop": stop_any(stop_after_attempt(policy.max_attempts), _StopWhenSpent(budget)),
        "wait": _Wait(policy),
        "before_sleep": before_sleep,
        "retry_error_callback": give_up,
    }


def call_with_retries(
    send: Callable[[float | None], T], policy: RetryPolicy, service: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`send(time_left)`, again while it raises RetryableUpstreamError and `policy` allows.

    `time_left` is None for the first attempt, then the seconds left of the budget.
    `sleep` and `clock` are the real ones except in tests of the budget arithmetic.
    """
    budget = _Budget(policy.budget_s, clock)
    retrying = Retrying(sleep=sleep, **_retry_args(policy, service, budget))
    result: T = retrying(lambda: send(budget.time_left()))
    return result


async def call_with_retries_async(
    send: Callable[[float | None], Awaitable[T]], policy: RetryPolicy, service: str,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`call_with_retries` for coroutines: the waits are asyncio sleeps, so they cancel."""
    budget = _Budget(policy.budget_s, clock)
    retrying = AsyncRetrying(sleep=asyncio.sleep, **_retry_args(policy, service, budget))

    async def attempt() -> T:
        return await send(budget.time_left())

    result: T = await retrying(attempt)
    return result


def post_once(
    client: httpx.Client, url: str, body: dict[str, Any], service: str,
    time_left: float | None = None,
) -> httpx.Response:
    """One attempt of post_json, its timeouts cut to `time_left` (None: the client's own)."""
    request = client.build_request("POST", url, json=body,
                                   timeout=capped_timeout(client.timeout, time_left))
    with client_span(service, request) as answered:  # a no-op unless tracing is on
        try:
            response = client.send(request)
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"{service} timed out: {type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise transport_error(exc, f"{service} unreachable: {exc}") from exc
        answered(response.status_code)
    if response.status_code >= 400:
        raise status_error(service, response.status_code, response.headers, response.text)
    return response


def post_json(
    client: httpx.Client, url: str, body: dict[str, Any], service: str,
    retry: RetryPolicy = NO_RETRY,
) -> httpx.Response:
    """The response of a 2xx/3xx answer; timeouts, transport errors and 4xx/5xx raise.

    `service` names the server in the message ("reranker", "rewriter"), which the trace shows.
    Overload answers and lost connections are retried as `retry` allows.
    """
    return call_with_retries(
        lambda time_left: post_once(client, url, body, service, time_left), retry, service
    )
