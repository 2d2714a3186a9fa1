"""The body of every error response, apart from the handlers: the Python client parses it
without importing FastAPI (a client's import is not a server's start-up)."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorBody(BaseModel):
    """The body of every error response."""

    code: str
    message: str
