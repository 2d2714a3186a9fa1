"""Ports of the models: the embedder and other text encoders, rewrite, rerank and chat."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ragsift.domain.stages import RerankScore, RewriteProposal

if TYPE_CHECKING:  # annotations only: a search never loads the chat models
    from ragsift.domain.chat import ChatMessage, TokenUsage

Vectors = NDArray[np.float32]


class Tokenizer(Protocol):
    def count_tokens(self, text: str) -> int:
        """Tokens the embedder would spend on `text` (without prefix and special tokens)."""
        ...


class TextEncoder(Protocol):
    """Texts to unit vectors: the e5 embedder, and the second dense channel's model."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 rows, one per text."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One unit-length float32 vector."""
        ...


class Embedder(Tokenizer, TextEncoder, Protocol):
    """The embedder of chunks and queries (its tokens bound chunk sizes)."""


@runtime_checkable
class BatchEmbedding(Protocol):
    """An encoder given many passage batches at once (a hosted one sends them concurrently)."""

    def embed_passage_batches(
        self, batches: Sequence[Sequence[str]]
    ) -> Iterator[Vectors | Exception]:
        """Each batch's rows, or the error that failed it, in order: a failed batch fails
        only its own texts."""
        ...


def passage_batches(
    encoder: TextEncoder, batches: Sequence[Sequence[str]]
) -> Iterator[Vectors | Exception]:
    """`encoder`'s embed_passage_batches, or else its batches one after the other."""
    if isinstance(encoder, BatchEmbedding):
        yield from encoder.embed_passage_batches(batches)
        return
    for batch in batches:
        try:
            yield encoder.embed_passages(batch)
        except Exception as exc:  # the caller decides what a failed batch fails
            yield exc


@runtime_checkable
class RemoteEmbedder(Protocol):
    """An embedder behind a network (a hosted model server): it can be down while the rest
    of the service works, and it may learn its dimension instead of being told it."""

    @property
    def known_dimension(self) -> int | None:
        """The dimension when configured, adopted or probed already; None before."""
        ...

    def adopt_dimension(self, dimension: int) -> None:
        """Take the dimension a knowledge base recorded for this model (no probe needed)."""
        ...

    def ping(self) -> None:
        """One short attempt at embedding; UpstreamError when the server does not answer."""
        ...


class QueryRewriter(Protocol):
    """Proposes at most one rewrite of a query (an LLM behind an HTTP API)."""

    def rewrite(self, query: str) -> RewriteProposal:
        """Raises UpstreamError when the server fails or answers something unusable."""
        ...


class Reranker(Protocol):
    """Scores passages against a query; scores order this batch only."""

    @property
    def model_id(self) -> str: ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        """Scores for (some of) the passages, by index; raises UpstreamError on failure.

        The caller validates the answer (indices in range, no duplicates, finite scores,
        not empty).
        """
        ...


class ChatModel(Protocol):
    """A chat model that streams its answer (an OpenAI-compatible server)."""

    @property
    def model_name(self) -> str: ...

    def stream(
        self, messages: Sequence[ChatMessage]
    ) -> AsyncGenerator[str | TokenUsage, None]:
        """The answer's text deltas as they arrive, then the call's TokenUsage when the server
        reported it; raises UpstreamError when the server fails.

        Closing the generator early (the client went away) closes the upstream stream.
        """
        ...
