"""Typed errors; each maps to one CLI exit code and one HTTP status."""

from __future__ import annotations


class RagsiftError(Exception):
    """Base of every error ragsift raises on purpose."""

    code = "internal_error"


class InvalidInput(RagsiftError):
    """The caller sent something unusable (CLI exit 2, HTTP 4xx)."""

    code = "invalid_input"


class NotFound(InvalidInput):
    """A named knowledge base, document or chunk does not exist."""

    code = "not_found"


class DocumentRejected(InvalidInput):
    """A document cannot be ingested; the document ends FAILED with this reason."""

    code = "document_rejected"


class RetrievalUnavailable(RagsiftError):
    """Every requested retrieval channel failed: an error, never an empty result."""

    code = "retrieval_unavailable"


class UpstreamError(RagsiftError):
    """A model server or other dependency answered badly or not at all."""

    code = "upstream_error"
