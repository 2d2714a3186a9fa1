"""The HTTP API: FastAPI app, one router per resource, background ingestion worker, metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsift.api.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # create_app is imported on first use, so `ragsift.client` can import the schema modules
    # without the app, its routes and the whole service behind them
    if name == "create_app":
        from ragsift.api.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
