"""The client's exceptions: one class per kind of answer, mapped from the `{"code", "message"}`
body every API error carries."""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import ValidationError

from ragsift.adapters.http_post import parse_retry_after


class RagsiftClientError(Exception):
    """Anything the client raises on purpose."""


class RagsiftConnectionError(RagsiftClientError):
    """No usable answer: the server could not be reached, timed out, or a stream broke off."""


class WaitTimeoutError(RagsiftClientError, TimeoutError):
    """`wait_until_ready` ran out of time; `pending` maps each unsettled id to its status."""

    def __init__(self, message: str, pending: dict[str, str]) -> None:
        super().__init__(message)
        self.pending = pending


class RagsiftApiError(RagsiftClientError):
    """The server answered with an error: its HTTP status, stable code and message.

    `retry_after` is the server's Retry-After in seconds, when it sent one.
    """

    def __init__(
        self, status: int, code: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class InvalidRequestError(RagsiftApiError):
    """400, 413, 415, 422: the request itself is wrong; sending it again will not help."""


class ClientValidationError(InvalidRequestError, ValueError):
    """A request refused before sending, as the server would refuse it (status 422, code
    `invalid_request`): a bad search or chat option, an invalid name, status or empty id.

    `errors` lists pydantic's error dicts when the API's request model refused it. Also a
    ValueError (these were pydantic ValidationErrors, which are ValueErrors, before).
    """

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(422, "invalid_request", message)
        self.args = (f"invalid request, not sent: {message}",)  # no HTTP answer to show
        self.errors = errors or []

    @classmethod
    def from_pydantic(cls, exc: ValidationError) -> ClientValidationError:
        details = exc.errors(include_url=False)
        parts = [": ".join(filter(None, (".".join(str(p) for p in error["loc"]), error["msg"])))
                 for error in details]
        return cls("; ".join(parts) or "invalid request", [dict(error) for error in details])


class AuthError(RagsiftApiError):
    """401 or 403: the key is missing, bad, or may not do this."""


class UnauthorizedError(AuthError):
    """401: missing, malformed, unknown, revoked or expired key."""


class ForbiddenError(AuthError):
    """403: the key's role or scope does not allow the request."""


class NotFoundError(RagsiftApiError):
    """404: unknown knowledge base, document or conversation (or another key's)."""


class ConflictError(RagsiftApiError):
    """409: a name taken, a document or conversation busy, an embedding model mismatch."""


class RateLimitedError(RagsiftApiError):
    """429: the key (or client address) is over its rate or concurrency limit."""


class UnavailableError(RagsiftApiError):
    """503: the server is overloaded or every retrieval channel failed."""


class ServerError(RagsiftApiError):
    """Any other 5xx (500 internal error, 502 chat model failed)."""


_BY_STATUS: dict[int, type[RagsiftApiError]] = {
    400: InvalidRequestError, 401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError,
    409: ConflictError, 413: InvalidRequestError, 415: InvalidRequestError,
    422: InvalidRequestError, 429: RateLimitedError, 503: UnavailableError,
}


def error_class(status: int) -> type[RagsiftApiError]:
    """The exception class for an HTTP error status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else RagsiftApiError


def error_from_response(response: httpx.Response) -> RagsiftApiError:
    """The exception for an error answer whose body has been read."""
    status = response.status_code
    code, message = "http_error", response.text[:500] or response.reason_phrase
    try:
        body = json.loads(response.content)
    except ValueError:
        body = None  # a proxy's HTML page, say: keep its text as the message
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        code, message = body["code"], str(body.get("message", ""))
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    return error_class(status)(status, code, message, retry_after)
