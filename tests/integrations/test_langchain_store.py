"""LangChain's own standard vector store suite (`langchain-tests`' VectorStoreIntegrationTests,
sync and async, unmodified) against the session's live `ragsift serve`: a fresh KB per test,
texts written through /api/kbs/{kb_id}/texts and embedded by the server's real embedder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from client.client_helpers import Served
from ragsift.client import RagsiftClient
from ragsift.integrations.langchain_store import RagsiftVectorStore

# the suite's async tests carry no marker of their own (LangChain's repos run asyncio_mode
# "auto"); the anyio plugin runs them here and ignores the mark on the sync tests
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class TestRagsiftVectorStoreStandard(VectorStoreIntegrationTests):
    """An empty KB per test (the suite expects an empty store), deleted afterwards."""

    @pytest.fixture
    def vectorstore(self, retrieval_server: Served) -> Iterator[VectorStore]:
        with RagsiftClient(retrieval_server.url, api_key=retrieval_server.admin_key) as admin:
            kb = admin.create_kb(f"lc-{uuid.uuid4().hex[:12]}")
            try:
                # an editor key writes and deletes texts; the suite's embeddings are unused
                yield RagsiftVectorStore(base_url=retrieval_server.url,
                                         api_key=retrieval_server.editor_key, kb_id=kb.id)
            finally:
                admin.delete_kb(kb.id)
