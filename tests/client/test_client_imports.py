"""`import ragsift.client` loads a client, not the server behind it: an SDK user's script and
`ragsift search --server` pay for httpx and the API's models only."""

from __future__ import annotations

import pytest

from support.imports import modules_after

SERVER_SIDE = ("fastapi", "starlette", "uvicorn", "numpy", "sqlalchemy", "tantivy", "rjieba",
               "ragsift.chat.service", "ragsift.ports", "ragsift.retrieval", "ragsift.config")


def _server_modules_after(module: str) -> set[str]:
    modules = modules_after(f"import {module}")
    return {name for name in SERVER_SIDE if name in modules}


def test_importing_the_client_imports_nothing_of_the_server() -> None:
    assert _server_modules_after("ragsift.client") == set()


def test_the_langchain_retriever_brings_the_client_only() -> None:
    pytest.importorskip("langchain_core")
    assert _server_modules_after("ragsift.integrations.langchain") == set()
