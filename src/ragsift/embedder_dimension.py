"""The dense vectors' dimension, known without asking a hosted embedder when it can be.

A hosted embedder's dimension comes from RAGSIFT_OPENAI_EMBEDDING_DIM, else from the record
of the knowledge bases built with its model, else from a probe. Only a data directory with
no such record needs the server at startup: an unreachable embedder otherwise fails the
dense channel of each search (`dense_retrieval_failed`), never the process.
"""

from __future__ import annotations

from typing import Protocol

from ragsift.domain.errors import InvalidInput, UpstreamError
from ragsift.domain.models import KnowledgeBase
from ragsift.ports import Embedder, RemoteEmbedder


class KnowledgeBases(Protocol):
    def list_kbs(self) -> list[KnowledgeBase]: ...


def recorded_dimension(repository: KnowledgeBases, model_id: str) -> int | None:
    """The dimension the knowledge bases built with `model_id` record; None when none is."""
    found = {kb.embedding_dim for kb in repository.list_kbs() if kb.embedding_model == model_id}
    if len(found) > 1:
        # one index holds every KB's vectors: they cannot differ
        raise InvalidInput(f"knowledge bases built with {model_id} record the dimensions "
                           f"{sorted(found)}; set RAGSIFT_OPENAI_EMBEDDING_DIM to the right one")
    return found.pop() if found else None


def resolve_dimension(embedder: Embedder, repository: KnowledgeBases) -> int:
    """The embedder's dimension, adopted from a KB's record before any probe is sent."""
    if not isinstance(embedder, RemoteEmbedder) or embedder.known_dimension is not None:
        return embedder.dimension
    recorded = recorded_dimension(repository, embedder.model_id)
    if recorded is not None:
        embedder.adopt_dimension(recorded)
        return recorded
    try:
        return embedder.dimension
    except UpstreamError as exc:
        raise InvalidInput(
            f"the dimension of {embedder.model_id} is unknown: no knowledge base records it "
            f"and the embedding server could not be asked ({exc}); start the embedding "
            "server or set RAGSIFT_OPENAI_EMBEDDING_DIM") from exc
