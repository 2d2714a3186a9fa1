"""Fixtures for service tests on the real stack: one fake model server process and one
ingested container (bootstrap.build: e5, tantivy, SQLite) per session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragsift.bootstrap import Container, build, build_reranker, build_rewriter
from ragsift.domain.models import KnowledgeBase
from ragsift.ports import Embedder
from ragsift.retrieval.service import RetrievalService
from retrieval.real_stack import DOCUMENTS, ServiceFactory, stack_settings
from support.fixtures import LLMServer


@pytest.fixture(scope="session")
def stack(
    tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer
) -> Iterator[Container]:
    """bootstrap.build over a fresh data dir with the corpus ingested, every document READY."""
    root = tmp_path_factory.mktemp("stack")
    container = build(stack_settings(root / "data", llm_server_process))
    kb = container.ingestion.ensure_kb("policies")
    for name, text in DOCUMENTS.items():
        path = root / name
        path.write_text(text, encoding="utf-8")
        outcome = container.ingestion.ingest_path(kb, path)
        assert outcome.document.error is None, outcome.document.error
    yield container
    container.close()


@pytest.fixture(scope="session")
def kb(stack: Container) -> KnowledgeBase:
    found = stack.repository.get_kb_by_name("policies")
    assert found is not None
    return found


@pytest.fixture
def service_with(stack: Container, llm_server: LLMServer) -> ServiceFactory:
    """A RetrievalService over the session's stores with other settings (or embedder); the
    rewriter and reranker are wired by bootstrap from those settings."""

    def make(embedder: Embedder | None = None, **overrides: Any) -> RetrievalService:
        settings = stack_settings(stack.settings.data_dir, llm_server, **overrides)
        return RetrievalService(
            stack.repository, stack.index, embedder or stack.embedder, settings,
            rewriter=build_rewriter(settings), reranker=build_reranker(settings),
        )

    return make
