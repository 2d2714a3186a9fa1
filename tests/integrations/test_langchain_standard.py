"""LangChain's own standard retriever suite (`langchain-tests`' RetrieversIntegrationTests, run
unmodified with its defaults: the count is called `k`) against a live `ragsift serve`, without
and with a metadata filter configured."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from client.client_helpers import Handbook, Served
from integrations.retriever_helpers import CARRY_OVER
from ragsift.integrations.langchain import RagsiftRetriever

# the suite's one async test carries no marker of its own (LangChain's repos run asyncio_mode
# "auto"); the anyio plugin runs it here and ignores the mark on the sync tests
pytestmark = pytest.mark.anyio


class TestRagsiftRetrieverStandard(RetrieversIntegrationTests):
    """The session's server and `library` KB (two documents, enough passages for k=3)."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"  # the async client is httpx on asyncio

    @pytest.fixture(autouse=True)
    def _served(self, retrieval_server: Served, library: Handbook) -> None:
        self._params = {"base_url": retrieval_server.url,
                        "api_key": retrieval_server.reader_key, "kb": "library"}

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RagsiftRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return self._params

    @property
    def retriever_query_example(self) -> str:
        return CARRY_OVER


class TestRagsiftRetrieverStandardWithAFilter(TestRagsiftRetrieverStandard):
    """The same suite with a metadata filter configured (one both documents pass: the suite
    needs k=3 passages)."""

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {**self._params, "filter": {"$or": [{"dept": "hr"}, {"year": {"$gte": 2024}}]}}
