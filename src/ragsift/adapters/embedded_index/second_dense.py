"""The embedded index's second dense channel: another model's vectors of the same chunks.

Its matrix store opens on first use, so a process that only answers same-script queries never
replays its row log (at a million chunks that is seconds of start-up and gigabytes mapped).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_store import CHECKPOINT_ROWS, DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from ragsift.ports import TextEncoder, Vectors

logger = logging.getLogger(__name__)


def second_directory(model_id: str) -> str:
    """The second dense store's folder, named by its model (another model: another folder)."""
    return "dense-" + "".join(c if c.isalnum() else "-" for c in model_id)


class SecondDense:
    """A DenseMatrixStore of `encoder`'s vectors beside the index's own, opened lazily.

    `primary_count`: the index's chunk count, to report chunks this store lacks when it opens.
    """

    def __init__(self, directory: Path, encoder: TextEncoder, ann: AnnSettings | None,
                 primary_count: Callable[[], int], checkpoint_rows: int = CHECKPOINT_ROWS,
                 follow: bool = False) -> None:
        self.encoder = encoder
        self._follow = follow
        self._directory = directory / second_directory(encoder.model_id)
        self._ann = ann
        self._primary_count = primary_count
        self._checkpoint_rows = checkpoint_rows
        self._store: DenseMatrixStore | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.encoder.model_id

    def store(self) -> DenseMatrixStore:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    store = DenseMatrixStore(self._directory, self.encoder.dimension, self._ann,
                                             self._checkpoint_rows, follow=self._follow)
                    primary = 0 if self._follow else self._primary_count()  # a follower lags
                    if store.count() < primary:
                        logger.warning(
                            "%s: %d of %d chunks have no %s vector (indexed before the second "
                            "dense channel was on); `ragsift fill-second-dense` fills them",
                            self._directory, primary - store.count(), primary, self.model_id)
                    self._store = store
        return self._store

    def encode(self, records: Sequence[IndexRecord]) -> Vectors:
        return self.encoder.embed_passages([record.text for record in records])

    def write(self, records: Sequence[IndexRecord], vectors: Vectors) -> None:
        self.store().upsert(records, vectors)

    def update_records(self, records: Sequence[IndexRecord]) -> None:
        self.store().update_records(records)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        self.store().delete_chunks(chunk_ids)

    def delete_document(self, document_id: str) -> None:
        self.store().delete_document(document_id)

    def document_chunk_ids(self, document_id: str) -> set[str]:
        return self.store().document_chunk_ids(document_id)

    def fill(self, records: Sequence[IndexRecord]) -> int:
        """Encode and store the records this store lacks; returns how many (idempotent)."""
        store = self.store()
        held: dict[str, set[str]] = {}
        missing = [
            record for record in records
            if record.chunk_id not in held.setdefault(
                record.document_id, store.document_chunk_ids(record.document_id))
        ]
        if missing:
            store.upsert(missing, self.encode(missing))
        return len(missing)

    def search(self, query: str, search_filter: SearchFilter, limit: int) -> list[ChannelHit]:
        store = self.store()
        return store.search(self.encoder.embed_query(query), search_filter, limit)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
