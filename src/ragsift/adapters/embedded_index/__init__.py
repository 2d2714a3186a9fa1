"""Zero-setup on-disk search index: exact dense search plus tantivy BM25."""

from ragsift.adapters.embedded_index.index import EmbeddedIndex

__all__ = ["EmbeddedIndex"]
