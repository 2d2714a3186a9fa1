"""`import ragsift.client` loads a client, not the server behind it: an SDK user's script and
`ragsift search --server` pay for httpx and the API's models only."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SERVER_SIDE = ("fastapi", "starlette", "uvicorn", "numpy", "sqlalchemy", "tantivy", "rjieba",
               "ragsift.chat.service", "ragsift.ports", "ragsift.retrieval", "ragsift.config")


def _server_modules_after(module: str) -> set[str]:
    probe = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    return {name for name in SERVER_SIDE if name in modules}


def test_importing_the_client_imports_nothing_of_the_server() -> None:
    assert _server_modules_after("ragsift.client") == set()


def test_the_langchain_retriever_brings_the_client_only() -> None:
    pytest.importorskip("langchain_core")
    assert _server_modules_after("ragsift.integrations.langchain") == set()
