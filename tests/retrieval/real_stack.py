"""The real retrieval stack for service tests: a tiny bilingual corpus, settings and helpers.

Children of about 32 tokens without overlap, so every section splits into several children
of one parent: Small2Big and auto-merge have siblings to work with. The fixtures live in
conftest.py; tests import the helpers from here.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragsift.config import Settings
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.retrieval.service import RetrievalService
from support.fixtures import LLMServer

HANDBOOK = """# Travel policy

## Hotels

Hotel rooms are booked through the travel desk. The hotel limit per night is 150 dollars in
most cities. In London, Tokyo and New York the hotel limit per night rises to 220 dollars.
Suites and upgrades are never reimbursed. Keep the itemised hotel invoice for every stay.

## Meals

Meals on business trips are reimbursed up to 60 dollars per day. Alcohol is not reimbursed.
Client dinners need the approval of a director before the trip.
"""

EXPENSES = """# 报销制度

## 差旅报销

差旅费用须在出差结束后 30 天内提交报销申请。住宿标准为每晚 500 元。超出标准的部分由员工自行承担。
报销时须附上发票原件和行程单。财务部门在收到申请后十个工作日内完成审核。

## 年假

员工每年享有十五天带薪年假。未休完的年假最多可结转五天到下一年。年假须提前一周申请。
"""

RELEASE = """# Release notes

## Firmware 2.4.1

Firmware v2.4.1 (2024-03-18) fixes error E-104 when Wi-Fi authentication fails. The router
retries the handshake three times before it reports E-104. 固件 v2.4.1 修复了 Wi-Fi 认证失败时的
E-104 错误。Update through the admin page or the mobile app.
"""

DOCUMENTS = {"handbook.md": HANDBOOK, "expenses.md": EXPENSES, "release.md": RELEASE}

BASE_SETTINGS: dict[str, Any] = {
    "chunk_tokens": 32,
    "chunk_overlap_tokens": 0,
    "reranker": "http",
    # the corpus is mostly Chinese by script share, so English queries would be translated:
    # off here, the cross-lingual tests switch it on
    "cross_lingual": False,
}

# Off unless a test is about them: keeps each test to the stage it proves.
# the handbook KB is mostly Chinese, so its English queries would also search the second dense
# channel (tests/retrieval/test_cross_lingual.py covers it); QUIET leaves it out too
QUIET: dict[str, Any] = {"rewrite": False, "rerank": False, "small2big": False,
                         "second_dense": False}

# make(embedder=None, **settings overrides) -> a RetrievalService over the session's stores
ServiceFactory = Callable[..., RetrievalService]


def stack_settings(data_dir: Path, server: LLMServer, **overrides: Any) -> Settings:
    """Settings of the real stack, talking to `server` for rewrite (chat) and rerank."""
    values: dict[str, Any] = {
        **BASE_SETTINGS,
        "data_dir": data_dir,
        "llm_base_url": f"{server.url}/v1",
        "rerank_base_url": f"{server.url}/v1",
        **overrides,
    }
    return Settings(**values)


def closed_port() -> int:
    """A local port nothing listens on (bound once, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def search(
    service: RetrievalService, kb: KnowledgeBase, query: str, **fields: Any
) -> RetrievalResult:
    request = SearchRequest.model_validate({"query": query, "kb_id": kb.id, **fields})
    return asyncio.run(service.search(request))


def ids(result: RetrievalResult) -> list[str]:
    return [hit.chunk_id for hit in result.hits]


def ranking(result: RetrievalResult) -> list[tuple[str, float]]:
    return [(hit.chunk_id, hit.fusion_score) for hit in result.hits]


def handbook_data_dir(tmp_path: Path, server: LLMServer) -> Path:
    """A fresh data dir holding KB "policies" with the handbook ingested (for CLI tests)."""
    from ragsift.bootstrap import build  # local: keeps this module importable without a stack

    data_dir = tmp_path / "data"
    container = build(stack_settings(data_dir, server))
    try:
        knowledge_base = container.ingestion.ensure_kb("policies")
        (tmp_path / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
        container.ingestion.ingest_path(knowledge_base, tmp_path / "handbook.md")
    finally:
        container.close()
    return data_dir
