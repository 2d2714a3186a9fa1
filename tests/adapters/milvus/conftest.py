"""Milvus adapter tests: milvus-lite in this process, skipped (with the reason) only where it
cannot be imported, and failing instead under RAGSIFT_TEST_MILVUS=require (set by .ci/run)."""

from __future__ import annotations

import pytest

from support.index_backends import require_milvus_lite


@pytest.fixture(scope="session")
def milvus_lite() -> None:
    """Skip (or, when required, fail) unless pymilvus, milvus-lite and jieba import."""
    require_milvus_lite()
