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


class EmbeddingModelMismatch(InvalidInput):
    """A knowledge base is searched with another embedding model than it was built with.

    Its vectors and the query's would not be comparable (CLI exit 2, HTTP 409).
    """

    code = "embedding_model_mismatch"


class DocumentBusy(InvalidInput):
    """The document is being ingested, reindexed or replaced (CLI exit 2, HTTP 409)."""

    code = "document_busy"


class RetrievalUnavailable(RagsiftError):
    """Every requested retrieval channel failed: an error, never an empty result."""

    code = "retrieval_unavailable"


class IndexReadOnly(RagsiftError):
    """The index was opened to follow another process's writes: it searches, never writes."""

    code = "index_read_only"


class IndexUnavailable(RagsiftError):
    """One knowledge base's index cannot be used until it is repaired (a damaged BM25 index,
    say); other knowledge bases are unaffected (CLI exit 1, HTTP 503)."""

    code = "index_unavailable"


class UpstreamError(RagsiftError):
    """A model server or other dependency answered badly or not at all."""

    code = "upstream_error"


class StorageFull(RagsiftError):
    """No space left where ragsift writes (the data directory, the database server's disk).

    The documents it stopped end FAILED with this message or are resumed by the next run
    (CLI exit 2, HTTP 507); recognised by ragsift/storage_full.py.
    """

    code = "storage_full"

    def __init__(
        self, message: str, needed_bytes: int | None = None, free_bytes: int | None = None
    ) -> None:
        super().__init__(message)
        self.needed_bytes = needed_bytes
        self.free_bytes = free_bytes
