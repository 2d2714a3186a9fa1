"""Protocols the services depend on; adapters implement them.

One module per kind of port: models (embedder, rewrite, rerank, chat), index (search index),
repository (facts, original files, tuned fusion), jobs, conversations, versions. Import them
from here: `from ragsift.ports import Embedder, SearchIndex`. Each is imported when first asked
for: a CLI search needs the index and model ports, not the conversation store's chat models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsift.ports.conversations import ConversationStore
    from ragsift.ports.index import (
        ChunkListable,
        RecordUpdatable,
        SearchIndex,
        SparseHealthReporting,
        SparsePreAnalyzable,
        SparseRebuild,
        SparseRebuildable,
    )
    from ragsift.ports.jobs import JobQueue
    from ragsift.ports.models import (
        BatchEmbedding,
        ChatModel,
        Embedder,
        QueryRewriter,
        RemoteEmbedder,
        Reranker,
        TextEncoder,
        Tokenizer,
        Vectors,
        passage_batches,
    )
    from ragsift.ports.repository import ObjectStore, Repository, TunedFusionStore
    from ragsift.ports.versions import VersionReader, VersionStore

__all__ = [
    "BatchEmbedding", "ChatModel", "ChunkListable", "ConversationStore", "Embedder", "JobQueue",
    "ObjectStore", "QueryRewriter", "RecordUpdatable", "RemoteEmbedder", "Repository",
    "Reranker", "SearchIndex", "SparseHealthReporting", "SparsePreAnalyzable", "SparseRebuild",
    "SparseRebuildable", "TextEncoder", "Tokenizer", "TunedFusionStore", "Vectors",
    "VersionReader", "VersionStore", "passage_batches",
]

# name -> its module under ragsift.ports
_HOMES = {
    "BatchEmbedding": "models",
    "ChatModel": "models",
    "ChunkListable": "index",
    "ConversationStore": "conversations",
    "Embedder": "models",
    "JobQueue": "jobs",
    "ObjectStore": "repository",
    "QueryRewriter": "models",
    "RecordUpdatable": "index",
    "RemoteEmbedder": "models",
    "Repository": "repository",
    "Reranker": "models",
    "SearchIndex": "index",
    "SparseHealthReporting": "index",
    "SparsePreAnalyzable": "index",
    "SparseRebuild": "index",
    "SparseRebuildable": "index",
    "TextEncoder": "models",
    "Tokenizer": "models",
    "TunedFusionStore": "repository",
    "Vectors": "models",
    "VersionReader": "versions",
    "VersionStore": "versions",
    "passage_batches": "models",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ragsift.ports' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ragsift.ports.{home}"), name)
    globals()[name] = value  # asked once
    return value
