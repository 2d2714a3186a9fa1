"""The HTTP API: FastAPI app, one router per resource, background ingestion worker, metrics."""

from ragsift.api.app import create_app

__all__ = ["create_app"]
