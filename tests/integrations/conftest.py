"""One live `ragsift serve` (auth on, a reranker) for the LangChain and LlamaIndex retrievers,
with its keys and a ready handbook KB of two documents in two tenants."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from api.api_helpers import HOTELS
from client.client_helpers import Handbook, Served
from integrations.retriever_helpers import LEAVE, PARKING
from ragsift.client import KbOut, RagsiftClient
from support.fixtures import LLMServer
from support.live_server import create_key, serving


@pytest.fixture(scope="session")
def retrieval_server(
    tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer
) -> Iterator[Served]:
    """Small chunks (neighbours for Small2Big) and the fake model server's reranker."""
    root = tmp_path_factory.mktemp("retriever_server")
    data_dir = root / "data"
    keys = {role: create_key(data_dir, role, role) for role in ("admin", "editor", "reader")}
    with serving(data_dir, root / "server.log", RAGSIFT_AUTH="true",
                 RAGSIFT_CHUNK_TOKENS="32", RAGSIFT_CHUNK_OVERLAP_TOKENS="0",
                 RAGSIFT_RERANKER="http",
                 RAGSIFT_RERANK_BASE_URL=f"{llm_server_process.url}/v1") as server:
        yield Served(server, keys["admin"], keys["editor"], keys["reader"])


@pytest.fixture(scope="session")
def library(retrieval_server: Served) -> Handbook:
    """`library`: hotels.md (tenant acme; dept travel, year 2024) and leave.md (tenant globex;
    dept hr, year 2023), both READY."""
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.admin_key) as client:
        kb = client.create_kb("library")
        hotels = client.upload_document(kb.id, ("hotels.md", HOTELS), tenant_id="acme",
                                        metadata={"dept": "travel", "year": 2024})
        leave = client.upload_document(kb.id, ("leave.md", LEAVE), tenant_id="globex",
                                       metadata={"dept": "hr", "year": 2023})
        ready = client.wait_until_ready([hotels, leave], timeout=120)
        assert [d.status for d in ready] == ["READY", "READY"], retrieval_server.server.log_text()
        return Handbook(client.get_kb(kb.id), *ready)


@pytest.fixture(scope="session")
def annex(retrieval_server: Served) -> KbOut:
    """`annex`: a second KB (facilities.md) for searches over several KBs."""
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.admin_key) as client:
        kb = client.create_kb("annex")
        facilities = client.upload_document(kb.id, ("facilities.md", PARKING))
        [ready] = client.wait_until_ready([facilities], timeout=120)
        assert ready.status == "READY", retrieval_server.server.log_text()
        return kb


@pytest.fixture
def reader_client(retrieval_server: Served) -> Iterator[RagsiftClient]:
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.reader_key) as client:
        yield client
