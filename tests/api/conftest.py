"""API fixtures: a started app over a real container (e5, tantivy, SQLite) on tmp data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.api_helpers import SMALL_CHUNKS, Api
from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings

ApiFactory = Callable[..., Api]


@contextmanager
def open_api(data_dir: Path, **overrides: Any) -> Iterator[Api]:
    """A container on `data_dir` (small chunks) and its started app; both closed afterwards."""
    container = build(Settings(data_dir=data_dir, **{**SMALL_CHUNKS, **overrides}))
    try:
        with TestClient(create_app(container)) as client:
            yield Api(client, container)
    finally:
        container.close()  # after the app's shutdown has stopped the worker


@pytest.fixture
def make_api(tmp_path: Path) -> Iterator[ApiFactory]:
    """make_api(**settings) -> a fresh started app (~40 ms); all closed after the test."""
    with ExitStack() as stack:
        count = 0

        def make(**overrides: Any) -> Api:
            nonlocal count
            count += 1
            return stack.enter_context(open_api(tmp_path / f"data{count}", **overrides))

        yield make


@pytest.fixture
def api(make_api: ApiFactory) -> Api:
    return make_api()
