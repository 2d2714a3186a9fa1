"""Errors of the compatibility routes in the formats their clients read.

Everything in the app answers errors as `{"code", "message"}` (api/errors.py), the access
checks of api/auth.py and the limits of api/middleware.py included. On two path prefixes one
ASGI layer translates those answers, whoever produced them:

- `/dify/` (Dify's External Knowledge API): `{"error_code", "error_msg"}`. 1001: the
  Authorization header is missing or not `Bearer KEY` (403); 1002: the key is unknown, revoked
  or expired, or may not use the knowledge base (403); 2001: the knowledge base does not exist
  (404); ragsift's own: 3001 an invalid request (400, an unsupported metadata condition
  included), 4001 too many requests (429 / 503 with Retry-After), 5001 an internal or upstream
  failure (5xx).
- `/v1/` (OpenAI-compatible chat): `{"error": {"message", "type", "param", "code"}}` with
  OpenAI's types (invalid_request_error, authentication_error, permission_error,
  rate_limit_error, server_error); ragsift's code is the `code`; 422 becomes 400, as OpenAI
  answers invalid parameters.

Successful answers and server-sent event streams pass through untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DIFY_PREFIX = "/dify/"
OPENAI_PREFIX = "/v1/"

# status, body; from (status, ragsift code, message, Authorization header or None)
Translated = tuple[int, dict[str, Any]]
Translator = Callable[[int, str, str, str | None], Translated]

DIFY_BAD_HEADER = 1001
DIFY_AUTH_FAILED = 1002
DIFY_NO_KNOWLEDGE = 2001
DIFY_INVALID = 3001
DIFY_TOO_MANY = 4001
DIFY_FAILED = 5001


def _well_formed_bearer(header: str | None) -> bool:
    if header is None:
        return False
    scheme, _, secret = header.partition(" ")
    return scheme.lower() == "bearer" and bool(secret) and secret == secret.strip()


def dify_error(status: int, code: str, message: str, authorization: str | None) -> Translated:
    """Dify's status and `{"error_code", "error_msg"}` for one ragsift error."""
    if status == 401:
        error = DIFY_AUTH_FAILED if _well_formed_bearer(authorization) else DIFY_BAD_HEADER
        return 403, {"error_code": error, "error_msg": message}
    if status == 403:
        return 403, {"error_code": DIFY_AUTH_FAILED, "error_msg": message}
    if code == "kb_not_found":
        return 404, {"error_code": DIFY_NO_KNOWLEDGE, "error_msg": message}
    if status == 429 or code == "overloaded":
        error = DIFY_TOO_MANY
    elif status >= 500:
        error = DIFY_FAILED
    else:
        error = DIFY_INVALID
    return (400 if status == 422 else status), {"error_code": error, "error_msg": message}


def _openai_type(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def openai_error(status: int, code: str, message: str, authorization: str | None) -> Translated:
    """OpenAI's status and `{"error": {...}}` for one ragsift error."""
    status = 400 if status == 422 else status
    return status, {"error": {"message": message, "type": _openai_type(status), "param": None,
                              "code": code}}


def openai_error_body(code: str, message: str, status: int = 500) -> dict[str, Any]:
    """An OpenAI error object for a stream that has already started (sent as its data)."""
    return openai_error(status, code, message, None)[1]


def _translator(path: str) -> Translator | None:
    if path.startswith(DIFY_PREFIX):
        return dify_error
    if path.startswith(OPENAI_PREFIX):
        return openai_error
    return None


def _code_and_message(status: int, body: bytes) -> tuple[str, str]:
    """ragsift's code and message from an error body; any other body (a plain-text refusal of
    a middleware) becomes a generic code and its text."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("code"), str) \
            and isinstance(parsed.get("message"), str):
        return parsed["code"], parsed["message"]
    text = body.decode("utf-8", "replace").strip()
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    return "http_error", text or phrase


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class CompatErrorMiddleware:
    """Rewrites error answers on the Dify and OpenAI prefixes into those APIs' formats."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        translate = _translator(scope.get("path", "")) if scope["type"] == "http" else None
        if translate is None:
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        parts: list[bytes] = []

        async def translating_send(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and int(message["status"]) >= 400:
                held = message  # an error: its body is read whole, then rewritten
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            parts.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            status = int(held["status"])
            code, text = _code_and_message(status, b"".join(parts))
            new_status, body = translate(status, code, text,
                                         _header(scope, b"authorization"))
            encoded = json.dumps(body, ensure_ascii=False).encode()
            await send(_start(held, new_status, encoded))
            # a HEAD answer declares the length of the body it does not send
            await send({"type": "http.response.body",
                        "body": b"" if scope.get("method") == "HEAD" else encoded})

        await self.app(scope, receive, translating_send)


def _start(held: Message, status: int, body: bytes) -> Message:
    dropped = {b"content-length", b"content-type"}
    if status != 401:
        dropped.add(b"www-authenticate")  # Dify's auth refusals are 403s
    headers = [(k, v) for k, v in held.get("headers", []) if k.lower() not in dropped]
    return {"type": "http.response.start", "status": status, "headers": [
        *headers, (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode())]}
