"""The id of the request being served, shared by its log lines and its retrieval trace."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

_request_id: ContextVar[str | None] = ContextVar("ragsift_request_id", default=None)
# a client may name its request (X-Request-ID); anything else gets a fresh id
_CLIENT_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")


def current_request_id() -> str:
    """The id set for this request, or a fresh one (a CLI command, a worker's job)."""
    return _request_id.get() or uuid.uuid4().hex


def bound_request_id() -> str | None:
    """The id set for this request, if any (for log lines)."""
    return _request_id.get()


def bind_request_id(client_value: str | None = None) -> str:
    """Set this context's request id: the client's when well-formed, else a new one."""
    value = client_value if client_value and _CLIENT_ID.fullmatch(client_value) else None
    request_id = value or uuid.uuid4().hex
    _request_id.set(request_id)
    return request_id
