"""The index backends a whole-system test runs against: the embedded index and milvus-lite.

`index_uri(name, directory)` is the RAGSIFT_INDEX_URI of a backend (None: embedded); where
milvus-lite cannot be imported its cases are skipped with the reason, or fail under
RAGSIFT_TEST_MILVUS=require (set by .ci/run).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

SYSTEM_BACKENDS = ("embedded", "milvus-lite")


def require_milvus_lite() -> None:
    """Skip (or, when required, fail) unless pymilvus, milvus-lite and jieba import."""
    for module in ("pymilvus", "milvus_lite", "jieba"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            reason = f"{module} cannot be imported ({exc}); pip install 'ragsift[milvus]'"
            if os.environ.get("RAGSIFT_TEST_MILVUS") == "require":
                pytest.fail(f"RAGSIFT_TEST_MILVUS=require, but {reason}")
            pytest.skip(f"milvus-lite unavailable: {reason}")


def index_uri(name: str, directory: Path) -> str | None:
    """RAGSIFT_INDEX_URI for backend `name` with its data under `directory`."""
    if name == "embedded":
        return None
    require_milvus_lite()
    directory.mkdir(parents=True, exist_ok=True)
    return str(directory / "milvus.db")
