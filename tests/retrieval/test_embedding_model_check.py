"""A KB is searched with the embedding model it was built with, or in sparse mode only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.bootstrap import Container
from ragsift.domain.errors import EmbeddingModelMismatch
from ragsift.domain.models import KnowledgeBase
from retrieval.real_stack import QUIET, ServiceFactory, closed_port, handbook_data_dir, ids, search
from support.cli import ragsift
from support.fixtures import LLMServer

QUERY = "hotel limit per night"


def other_model(stack: Container) -> OpenAIEmbedder:
    """Another embedding model of the same dimension (never reached: nothing listens)."""
    return OpenAIEmbedder(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", model="bge-m3",
        tokenizer=stack.embedder, dimension=stack.embedder.dimension, timeout_s=2.0,
    )


@pytest.mark.parametrize("fields", [
    {"mode": "hybrid"}, {"mode": "dense"}, {}, {"mode": "hybrid", "run_doc": False},
], ids=["hybrid", "dense", "default_mode", "faq_only"])
def test_a_dense_search_with_another_embedding_model_is_refused(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
    fields: dict[str, object],
) -> None:
    service = service_with(embedder=other_model(stack))

    with pytest.raises(EmbeddingModelMismatch) as refused:
        search(service, kb, QUERY, **{**QUIET, **fields})

    message = str(refused.value)
    assert f"built with the embedding model {stack.embedder.model_id}" in message
    assert "the configured embedder is openai:bge-m3" in message
    assert "mode sparse" in message
    assert refused.value.code == "embedding_model_mismatch"


def test_a_sparse_search_with_another_embedding_model_is_allowed(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory,
) -> None:
    service = service_with(embedder=other_model(stack))

    result = search(service, kb, QUERY, mode="sparse", **QUIET)

    assert result.hits
    assert ids(result) == ids(search(stack.retrieval, kb, QUERY, mode="sparse", **QUIET))


def test_the_cli_refuses_another_embedding_model_with_exit_2_but_searches_sparse(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    data_dir = handbook_data_dir(tmp_path, llm_server)  # built with the local e5
    monkeypatch.setenv("RAGSIFT_EMBEDDER", "openai")
    monkeypatch.setenv("RAGSIFT_OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("RAGSIFT_OPENAI_EMBEDDING_DIM", "384")

    for command in ("search", "explain"):
        refused = ragsift(data_dir, command, QUERY, "--kb", "policies")
        assert refused.returncode == 2, refused.stderr
        message = " ".join(refused.stderr.split())  # rich wraps long lines
        assert "knowledge base 'policies' was built with the embedding model" in message
        assert "the configured embedder is openai:multilingual-e5-small" in message
        assert refused.stdout == ""

    sparse = ragsift(data_dir, "search", QUERY, "--kb", "policies", "--mode", "sparse", "--json")
    assert sparse.returncode == 0, sparse.stderr
    assert json.loads(sparse.stdout)
