"""Milvus adapter tests: milvus-lite in this process, skipped (with the reason) only where it
cannot be imported, and failing instead under RAGSIFT_TEST_MILVUS=require (set by .ci/run)."""

from __future__ import annotations

import importlib
import os

import pytest


@pytest.fixture(scope="session")
def milvus_lite() -> None:
    """Skip (or, when required, fail) unless pymilvus, milvus-lite and jieba import."""
    for module in ("pymilvus", "milvus_lite", "jieba"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            reason = f"{module} cannot be imported ({exc}); pip install 'ragsift[milvus]'"
            if os.environ.get("RAGSIFT_TEST_MILVUS") == "require":
                pytest.fail(f"RAGSIFT_TEST_MILVUS=require, but {reason}")
            pytest.skip(f"milvus-lite unavailable: {reason}")
