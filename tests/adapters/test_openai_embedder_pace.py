"""OpenAIEmbedder at the provider's pace, against the real local model-server process (a fixed
latency per call, scripted 429s, and its own log of every request): concurrent batches in
order, a requests/tokens budget the server never sees exceeded, Retry-After pausing every
worker, and an ingest where one refused batch fails only its document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.http_post import RetryPolicy
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.adapters.rate_budget import RateBudget
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.errors import UpstreamError
from ragsift.domain.models import DocumentStatus
from support.fixtures import LLMServer
from support.llm_server import hashed_embedding

QUICK_RETRY = RetryPolicy(max_attempts=5, backoff_s=0.01, budget_s=20.0)
TEXTS = [f"第{i}段 passage number {i} about leave policy" for i in range(24)]


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer()


@pytest.fixture
def embedders() -> Iterator[list[OpenAIEmbedder]]:
    made: list[OpenAIEmbedder] = []
    yield made
    for embedder in made:
        embedder.close()


def _embedder(made: list[OpenAIEmbedder], server: LLMServer, tokenizer: E5Tokenizer,
              **kwargs: Any) -> OpenAIEmbedder:
    embedder = OpenAIEmbedder(f"{server.url}/v1", "fake-e5", tokenizer, dimension=384,
                              passage_retry=QUICK_RETRY, **kwargs)
    made.append(embedder)
    return embedder


def _expected(texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
    rows = np.asarray([hashed_embedding(t, 384) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _most_in_any_window(requests: list[dict[str, Any]], window_s: float, key: str) -> int:
    """The most requests (key "n") or tokens (key "tokens") arriving within any window."""
    times = sorted((r["t"], 1 if key == "n" else r[key]) for r in requests)
    return max(sum(size for t, size in times if start <= t < start + window_s)
               for start, _ in times)


def test_batches_run_concurrently_and_come_back_in_input_order(
    llm_server: LLMServer, embedders: list[OpenAIEmbedder], tokenizer: E5Tokenizer
) -> None:
    llm_server.control(embeddings={"latency_s": 0.1})
    remote = _embedder(embedders, llm_server, tokenizer, concurrency=4, batch_size=2)
    vectors = remote.embed_passages(TEXTS)
    np.testing.assert_allclose(vectors, _expected(TEXTS), atol=1e-6)
    log = llm_server.embedding_log()
    assert [r["inputs"] for r in log["requests"]] == [2] * 12
    assert log["max_in_flight"] == 4


@pytest.mark.parametrize("limit", ["requests", "tokens"])
def test_the_server_never_sees_more_than_the_budget_in_any_window(
    llm_server: LLMServer, embedders: list[OpenAIEmbedder], tokenizer: E5Tokenizer, limit: str
) -> None:
    llm_server.control(embeddings={"latency_s": 0.05, "count_tokens": True})
    batch_tokens = [sum(tokenizer.count_tokens(t) for t in TEXTS[i : i + 2])
                    for i in range(0, 12, 2)]
    window = 0.4
    budget = RateBudget(requests=2, window_s=window) if limit == "requests" else \
        RateBudget(tokens=int(2.5 * max(batch_tokens)), window_s=window)
    remote = _embedder(embedders, llm_server, tokenizer, concurrency=4, batch_size=2,
                       budget=budget)
    np.testing.assert_allclose(remote.embed_passages(TEXTS[:12]), _expected(TEXTS[:12]),
                               atol=1e-6)
    requests = llm_server.embedding_log()["requests"]
    assert len(requests) == 6
    assert [r["tokens"] for r in requests] == batch_tokens or limit == "requests"
    if limit == "requests":
        assert _most_in_any_window(requests, window, "n") == 2
    else:
        assert _most_in_any_window(requests, window, "tokens") <= int(2.5 * max(batch_tokens))


def test_a_429s_retry_after_pauses_every_worker_not_only_the_refused_one(
    llm_server: LLMServer, embedders: list[OpenAIEmbedder], tokenizer: E5Tokenizer
) -> None:
    llm_server.control(embeddings={"latency_s": 0.05},
                       faults={"embeddings": {"status": 429, "retry_after": "0.4", "times": 1}})
    remote = _embedder(embedders, llm_server, tokenizer, concurrency=4, batch_size=2)
    np.testing.assert_allclose(remote.embed_passages(TEXTS[:16]), _expected(TEXTS[:16]),
                               atol=1e-6)
    requests = llm_server.embedding_log()["requests"]
    refused = next(r for r in requests if r["answer"] == 429)
    # requests sent before the 429 came back arrive at once; every later one after the pause
    later = [r["t"] - refused["done"] for r in requests if r["t"] > refused["done"] + 0.03]
    assert later and min(later) >= 0.4
    assert [r["answer"] for r in requests].count(200) == 8


def test_a_query_does_not_wait_longer_for_the_budget_than_for_its_retries(
    llm_server: LLMServer, embedders: list[OpenAIEmbedder], tokenizer: E5Tokenizer
) -> None:
    budget = RateBudget(requests=1, window_s=60.0)
    remote = _embedder(embedders, llm_server, tokenizer, budget=budget,
                       query_retry=RetryPolicy(max_attempts=1, budget_s=0.2))
    remote.embed_query("first")
    with pytest.raises(UpstreamError, match="embedding server not asked: the rate budget"):
        remote.embed_query("second")
    assert len(llm_server.embedding_log()["requests"]) == 1


def test_an_ingest_sends_batches_concurrently_and_a_refused_batch_fails_only_its_document(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.control(embeddings={"latency_s": 0.1, "refuse": "REFUSED"})
    settings = Settings(
        data_dir=tmp_path / "data", embedder="openai", openai_base_url=f"{llm_server.url}/v1",
        openai_embedding_dim=384, embedding_batch_size=2, openai_embedding_concurrency=4,
        prepare_workers=1,
    )
    lines = [f"第{i}条简短的标题 line {i}" for i in range(8)]
    lines[5] = "REFUSED line"
    container = build(settings)
    try:
        kb = container.ingestion.ensure_kb("kb")
        ids = [container.ingestion.accept(kb, f"d{i}.txt", f"{line}\n".encode()).document.id
               for i, line in enumerate(lines)]
        outcomes = list(container.ingestion.process_many(ids))
    finally:
        container.close()
    statuses = {o.document.filename: o.document.status for o in outcomes}
    assert statuses == {f"d{i}.txt": DocumentStatus.FAILED if i == 5 else DocumentStatus.READY
                        for i in range(8)}
    failed = next(o.document for o in outcomes if o.document.status == DocumentStatus.FAILED)
    assert failed.error is not None and "HTTP 400" in failed.error
    log = llm_server.embedding_log()
    assert log["max_in_flight"] > 1
    # four shared batches, then the refused batch's two documents alone: no other re-sent
    assert [r["inputs"] for r in log["requests"]] == [2, 2, 2, 2, 1, 1]


def test_a_batch_larger_than_the_whole_token_budget_fails_with_the_reason_unsent(
    llm_server: LLMServer, embedders: list[OpenAIEmbedder], tokenizer: E5Tokenizer
) -> None:
    remote = _embedder(embedders, llm_server, tokenizer, batch_size=4,
                       budget=RateBudget(tokens=20))
    with pytest.raises(UpstreamError, match="exceeds the whole budget of 20 tokens"):
        remote.embed_passages(TEXTS[:4])
    assert llm_server.embedding_log()["requests"] == []


def test_callers_that_start_at_once_share_one_batch_pool(
    llm_server: LLMServer, tokenizer: E5Tokenizer, embedders: list[OpenAIEmbedder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import ragsift.adapters.openai_embedder as module

    made: list[object] = []

    class SlowPool(ThreadPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            time.sleep(0.05)  # widens the window in which a second caller could build one
            made.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(module, "ThreadPoolExecutor", SlowPool)
    embedder = _embedder(embedders, llm_server, tokenizer, concurrency=2)
    results: list[int] = []

    def embed() -> None:
        results.append(sum(len(r) for r in embedder.embed_passage_batches([TEXTS[:2], TEXTS[2:4]])
                           if not isinstance(r, Exception)))

    callers = [threading.Thread(target=embed) for _ in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert results == [4, 4, 4, 4]
    assert len(made) == 1
