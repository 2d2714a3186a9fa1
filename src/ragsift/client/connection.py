"""What both clients send with every request."""

from __future__ import annotations

from collections.abc import Mapping

from ragsift import __version__

# connecting, and each wait for data; a chat model may think a while between stream events
DEFAULT_TIMEOUT_S = 60.0


def client_headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The bearer key (never a query parameter: the server refuses keys in URLs) and a UA."""
    headers = {"User-Agent": f"ragsift-client/{__version__}", **(extra or {})}
    if api_key is not None:
        if not api_key or api_key != api_key.strip():
            raise ValueError("api_key must be a non-empty key without surrounding spaces")
        headers["Authorization"] = f"Bearer {api_key}"
    return headers
