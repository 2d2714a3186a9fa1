"""The SearchIndex backends the conformance suite runs against, and how to open each."""

from __future__ import annotations

import importlib
from pathlib import Path

from index_corpus import DIM

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.ports import SearchIndex

# embedded-ann: the embedded index with its HNSW graph forced on from the first row and every
# filter searched through it, so the graph path meets the same contract as the exact scan.
BACKENDS = ("embedded", "embedded-ann", "milvus-lite")
FORCED_ANN = AnnSettings(min_rows=1, exact_max_rows=0, tail_rows=1, background=False)


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
        if self.name == "embedded-ann":
            return EmbeddedIndex(directory, dimension, ann=FORCED_ANN)
        from ragsift.adapters.milvus import MilvusIndex

        directory.mkdir(parents=True, exist_ok=True)
        return MilvusIndex(str(directory / "milvus.db"), "chunks", dimension)
