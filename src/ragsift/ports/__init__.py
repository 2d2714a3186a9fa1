"""Protocols the services depend on; adapters implement them.

One module per kind of port: models (embedder, rewrite, rerank, chat), index (search index),
repository (facts, original files, tuned fusion), jobs, conversations, versions. Import them
from here: `from ragsift.ports import Embedder, SearchIndex`.
"""

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
