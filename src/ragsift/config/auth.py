"""Access control: API keys, their rates, allowed hosts and origins
(docs/how-to/access-control.md)."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class AuthSettings(Concern):
    """Access control."""

    auth: bool = Field(
        default=True,
        description="require an API key (Authorization: Bearer) on /api; `ragsift serve` "
        "allows false only on a loopback address",
    )
    metrics_public: bool = Field(
        default=False, description="serve /metrics without a key (default: admin keys only)"
    )
    key_rate_per_s: float = Field(default=20.0, gt=0, description="requests a second per key")
    key_burst: int = Field(default=40, ge=1, description="requests a key may send at once "
                           "before its rate applies")
    key_max_concurrent: int = Field(default=8, ge=1, description="requests running per key")
    bad_key_rate_per_s: float = Field(
        default=2.0, gt=0, description="requests a second one client may make with a missing "
        "or bad key before they get 429")
    bad_key_burst: int = Field(
        default=20, ge=1,
        description="requests one client may send at once with a missing or bad key before "
        "bad_key_rate_per_s applies",
    )
    allowed_hosts: str = Field(
        default="", description="comma-separated Host names `serve` answers besides the "
        "loopback names and the bind address; `*` allows any")
    cors_origins: str = Field(
        default="", description="comma-separated origins allowed to call the API from a "
        "browser (CORS); none by default")
