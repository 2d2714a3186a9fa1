"""Milvus backend of the SearchIndex port (needs the `milvus` extra: pymilvus, milvus-lite)."""

from ragsift.adapters.milvus.index import MilvusIndex

__all__ = ["MilvusIndex"]
