"""Browser-test fixtures: real `ragsift serve` processes per module, a fresh Chromium per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fixtures import LLMServer
from web.web_helpers import Browser, LiveServer, handbook_server, require_browser


@pytest.fixture(scope="module")
def live_server(
    tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer
) -> Iterator[LiveServer]:
    """`ragsift serve` (real e5, small chunks, the local model server, API keys off) with KB
    "handbook"."""
    require_browser()  # no server start when the tests cannot run anyway
    with handbook_server(tmp_path_factory.mktemp("web_server"),
                         f"{llm_server_process.url}/v1") as server:
        yield server


@pytest.fixture(scope="module")
def extractive_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The same, with no chat model configured: chat answers are extractive."""
    require_browser()
    with handbook_server(tmp_path_factory.mktemp("web_extractive"), None) as server:
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
