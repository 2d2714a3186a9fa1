"""The embedded SearchIndex: a dense matrix store and a tantivy BM25 store in one directory."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from ragsift.ports import Vectors

logger = logging.getLogger(__name__)


class EmbeddedIndex:
    """Zero-setup SearchIndex: exact cosine under `dense/`, per-kb BM25 under `sparse/`."""

    def __init__(self, directory: Path, dimension: int) -> None:
        directory = Path(directory)
        # The BM25 store takes the directory's lock (sparse/.lock), so open it first: a second
        # process on the same directory then fails before the dense store replays (and
        # repairs) its files.
        self._sparse = TantivyBm25Store(directory / "sparse")
        try:
            self._dense = DenseMatrixStore(directory / "dense", dimension)
        except BaseException:
            self._sparse.close()
            raise
        if self._dense.count() != self._sparse.count():
            # Possible after a crash between the two writes; the next upsert of the same
            # chunks repairs it, and the relational store stays the source of truth.
            logger.warning(
                "embedded index %s: %d dense rows but %d BM25 documents",
                directory,
                self._dense.count(),
                self._sparse.count(),
            )

    @property
    def dimension(self) -> int:
        """Length of the vectors this index stores."""
        return self._dense.dimension

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None:
        """Insert or replace chunks (by chunk_id) in both stores."""
        # The dense store validates shapes first, so a bad batch changes neither store.
        self._dense.upsert(records, vectors)
        self._sparse.upsert(records)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Remove chunks by id from both stores."""
        ids = list(chunk_ids)
        self._dense.delete_chunks(ids)
        self._sparse.delete_chunks(ids)

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document from both stores."""
        self._dense.delete_document(document_id)
        self._sparse.delete_document(document_id)

    def search_dense(
        self, vector: Vectors, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Exact cosine top-k among the chunks the filter allows."""
        return self._dense.search(vector, search_filter, limit)

    def search_sparse(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Raw BM25 top-k among the chunks the filter allows."""
        return self._sparse.search(query, search_filter, limit)

    def count(self) -> int:
        """Number of live chunks (dense rows)."""
        return self._dense.count()

    def close(self) -> None:
        """Release the BM25 writers and lock; the index can be reopened afterwards."""
        self._sparse.close()
        self._dense.close()
