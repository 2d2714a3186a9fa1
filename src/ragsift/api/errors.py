"""Every error leaves the API as JSON `{"code", "message"}` with a stable code."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragsift.api.error_body import ErrorBody
from ragsift.domain.errors import (
    DocumentBusy,
    DocumentRejected,
    EmbeddingModelMismatch,
    IndexUnavailable,
    InvalidInput,
    NotFound,
    RagsiftError,
    RetrievalUnavailable,
)

logger = logging.getLogger(__name__)

# Errors that name their cause by code only (adapters raise them; the API imports no adapter).
_STATUS_BY_CODE = {"index_in_use": 503, "upstream_error": 502, "storage_full": 507}
_HTTP_CODES = {
    400: "invalid_request", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large",
}


class ApiError(Exception):
    """An error the API itself decides on: an HTTP status, a stable code and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def error_response(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    """The JSON error response every handler returns."""
    body = ErrorBody(code=code, message=message).model_dump()
    return JSONResponse(body, status_code=status, headers=headers or None)


def status_for(exc: RagsiftError) -> int:
    """The HTTP status of a domain error."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, DocumentRejected):
        return 422
    if isinstance(exc, DocumentBusy):
        return 409
    if isinstance(exc, EmbeddingModelMismatch):
        return 409  # the request is fine; the KB and the configured embedder disagree
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, (RetrievalUnavailable, IndexUnavailable)):
        return 503
    return _STATUS_BY_CODE.get(exc.code, 500)


def validation_message(errors: Any) -> str:
    """One line naming each invalid field: `body.top_k: Input should be ...; ...`."""
    parts = [
        f"{'.'.join(str(p) for p in error.get('loc', ()))}: {error.get('msg', 'invalid')}"
        for error in errors
    ]
    return "; ".join(parts) or "invalid request"


async def _ragsift_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RagsiftError)
    status = status_for(exc)
    if status >= 500:
        logger.error("%s %s failed: %s: %s", request.method, request.url.path, exc.code, exc)
    return error_response(status, exc.code, str(exc))


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, str(exc), **getattr(exc, "headers", {}))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(422, "invalid_request", validation_message(exc.errors()))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), **(exc.headers or {}))


def install_error_handlers(app: FastAPI) -> None:
    """Map domain errors, API errors, validation and routing errors to JSON bodies."""
    app.add_exception_handler(RagsiftError, _ragsift_error)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


# Declared on every route so the OpenAPI document names the error shape.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (400, "invalid input"),
        (404, "unknown knowledge base or document"),
        (422, "invalid request"),
        (500, "internal error"),
    )
}
