"""The SearchIndex backends the conformance suite runs against, and how to open each."""

from __future__ import annotations

import importlib
from pathlib import Path

from index_corpus import DIM

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.ports import SearchIndex

BACKENDS = ("embedded", "milvus-lite")


def milvus_missing() -> str | None:
    """Why the milvus-lite backend cannot run here, or None when it can."""
    for module in ("pymilvus", "milvus_lite", "jieba"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} cannot be imported ({exc}); pip install 'ragsift[milvus]'"
    return None


class Backend:
    """Opens indexes of one backend at a directory (milvus-lite: a `.db` file inside it)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, directory: Path, dimension: int = DIM) -> SearchIndex:
        if self.name == "embedded":
            return EmbeddedIndex(directory, dimension)
        from ragsift.adapters.milvus import MilvusIndex

        directory.mkdir(parents=True, exist_ok=True)
        return MilvusIndex(str(directory / "milvus.db"), "chunks", dimension)
