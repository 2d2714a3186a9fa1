"""Browser-test fixtures: real `ragsift serve` processes per module, a fresh Chromium per test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from api.api_helpers import FIRMWARE, HOTELS, LEAVE
from support.fixtures import LLMServer
from web.web_helpers import Browser, LiveServer, require_browser, run_server

HANDBOOK = {"hotels.md": HOTELS, "leave.md": LEAVE, "firmware.txt": FIRMWARE}


@contextmanager
def _handbook_server(root: Path, llm_url: str | None) -> Iterator[LiveServer]:
    env = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0",
           "RAGSIFT_REWRITE": "false"}  # the model server's chat answers are scripted per test
    if llm_url is not None:
        env |= {"RAGSIFT_LLM_BASE_URL": llm_url, "RAGSIFT_LLM_MODEL": "fake-chat"}
    with run_server(root / "data", root / "server.log", env) as server:
        server.ingest(server.create_kb("handbook"), HANDBOOK)
        yield server


@pytest.fixture(scope="module")
def live_server(
    tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer
) -> Iterator[LiveServer]:
    """`ragsift serve` (real e5, small chunks, the local model server) with KB "handbook"."""
    require_browser()  # no server start when the tests cannot run anyway
    with _handbook_server(tmp_path_factory.mktemp("web_server"),
                          f"{llm_server_process.url}/v1") as server:
        yield server


@pytest.fixture(scope="module")
def extractive_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The same, with no chat model configured: chat answers are extractive."""
    require_browser()
    with _handbook_server(tmp_path_factory.mktemp("web_extractive"), None) as server:
        yield server


@pytest.fixture
def browser(live_server: LiveServer, tmp_path: Path) -> Iterator[Browser]:
    """A headless Chromium on a fresh profile, pointed at the live server."""
    require_browser()
    chrome = Browser(live_server.url, tmp_path / "chromium-profile")
    try:
        yield chrome
    finally:
        chrome.quit()
