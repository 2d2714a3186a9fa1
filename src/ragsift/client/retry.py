"""When the client sends a request again, and how long it waits first.

429 and 503 are retried for every request, uploads and chat messages included: the server
answers those before it has changed anything (rate and concurrency limits refuse the request
before it is read; a search or chat whose retrieval channels all failed stores nothing), so
sending it again cannot do anything twice. The wait is the server's
Retry-After (plus a little jitter, so clients told the same time spread out), else an
exponential backoff. A Retry-After longer than `max_wait_s` is not waited for: the error is
raised at once and carries it. A refused connection is retried for every request (nothing was
sent); a connection lost after sending only for idempotent ones (reads, search, explain), since
the server may have acted on a POST or DELETE whose answer never came.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
)
from tenacity.stop import stop_base

from ragsift.client.errors import (
    RagsiftConnectionError,
    RateLimitedError,
    UnavailableError,
)

logger = logging.getLogger("ragsift.client")

# Nothing reached the server: safe to send again whatever the request.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The connection broke after the request went out (a keep-alive connection the server had
# just closed, say): only requests that change nothing are sent again.
_LOST = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


class TransportFailure(RagsiftConnectionError):
    """A transport error, with whether the request may be sent again."""

    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def transport_failure(exc: httpx.TransportError, idempotent: bool, what: str) -> TransportFailure:
    """The client's error for an httpx transport error of request `what`."""
    retryable = isinstance(exc, _NOT_SENT) or (idempotent and isinstance(exc, _LOST))
    return TransportFailure(f"{what} failed: {type(exc).__name__}: {exc}", retryable)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`retries` attempts after the first. A backoff is cut to `max_wait_s`; a Retry-After
    over it ends the retries (the server said when, and it is too late for this caller)."""

    retries: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 30.0

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError("retries must not be negative")
        if self.backoff_s < 0 or self.max_wait_s < 0:
            raise ValueError("backoff_s and max_wait_s must not be negative")

    def wait_s(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(failure, "retry_after", None)
        if isinstance(retry_after, float):
            # never earlier than asked
            return retry_after + random.uniform(0.0, min(0.5, 0.1 * retry_after))
        backoff: float = self.backoff_s * 2 ** (state.attempt_number - 1)
        return min(backoff + random.uniform(0.0, self.backoff_s), 8.0, self.max_wait_s)

    def _arguments(self, what: str) -> dict[str, Any]:
        def before_sleep(state: RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome is not None else None
            # a transport failure names the request already; the server's answers do not
            text = str(failure) if isinstance(failure, TransportFailure) else f"{what}: {failure}"
            logger.warning("%s; retry %d of at most %d in %.1f s", text,
                           state.attempt_number, self.retries, state.upcoming_sleep)

        return {
            "retry": retry_if_exception(retryable),
            "stop": stop_after_attempt(self.retries + 1) | _StopBeforeLongWait(self.max_wait_s),
            "wait": self.wait_s,
            "before_sleep": before_sleep,
            "reraise": True,  # the caller sees the server's last answer, not a RetryError
        }

    def retrying(self, what: str) -> Retrying:
        """The sync retry loop for request `what` (named in the log)."""
        return Retrying(**self._arguments(what))

    def async_retrying(self, what: str) -> AsyncRetrying:
        """The asyncio retry loop (its waits are asyncio sleeps, so they cancel)."""
        return AsyncRetrying(**self._arguments(what))


class _StopBeforeLongWait(stop_base):
    """Stop rather than wait longer than `max_wait_s` (tenacity computes the wait first)."""

    def __init__(self, max_wait_s: float) -> None:
        self._max_wait_s = max_wait_s

    def __call__(self, retry_state: RetryCallState) -> bool:
        return (retry_state.upcoming_sleep or 0.0) > self._max_wait_s


def retryable(exc: BaseException) -> bool:
    """Whether a failed attempt may be made again."""
    if isinstance(exc, (RateLimitedError, UnavailableError)):
        return True
    return isinstance(exc, TransportFailure) and exc.retryable
