"""One POST to a model server with its failures turned into UpstreamError."""

from __future__ import annotations

from typing import Any

import httpx

from ragsift.domain.errors import UpstreamError


def post_json(client: httpx.Client, url: str, body: dict[str, Any], service: str) -> httpx.Response:
    """The response of a 2xx/3xx answer; timeouts, transport errors and 4xx/5xx raise.

    `service` names the server in the message ("reranker", "rewriter"), which the trace shows.
    """
    try:
        response = client.post(url, json=body)
    except httpx.TimeoutException as exc:
        raise UpstreamError(f"{service} timed out: {type(exc).__name__}") from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(f"{service} unreachable: {exc}") from exc
    if response.status_code >= 400:
        raise UpstreamError(
            f"{service} answered HTTP {response.status_code}: {response.text[:200]}"
        )
    return response
