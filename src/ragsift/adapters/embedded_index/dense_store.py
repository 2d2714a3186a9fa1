"""Exact cosine search over an append-only, memory-mapped float32 matrix on disk."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_ann import AnnIndex, AnnSettings
from ragsift.adapters.embedded_index.dense_log import (
    FILTER_FIELDS,
    DenseFiles,
    Row,
    row_of_record,
)
from ragsift.adapters.embedded_index.dense_snapshot import Snapshot, encode_rows
from ragsift.adapters.vector_checks import checked_query, checked_rows, unit_rows
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

logger = logging.getLogger(__name__)

Float32Array = NDArray[np.float32]


class DenseMatrixStore:
    """Cosine top-k with filters applied before ranking; survives restart.

    Exact below `ann.min_rows` rows and for filters allowing at most `ann.exact_max_rows`
    rows; above, an HNSW graph (dense_ann) proposes candidates that are re-scored exactly.
    """

    def __init__(self, directory: Path, dimension: int, ann: AnnSettings | None = None) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._dimension = dimension
        self._lock = threading.Lock()
        self._files = DenseFiles(Path(directory), dimension)
        self._ann = AnnIndex(Path(directory), dimension, ann or AnnSettings(),
                             lambda: self._snapshot)
        self._row_of: dict[str, int] = {}
        rows, deleted = self._files.replay()
        self._snapshot = self._build_snapshot(rows, deleted)
        self._ann.opened(self._snapshot)
        logger.debug("opened dense store %s with %d live rows", directory, self._snapshot.live)

    @property
    def dimension(self) -> int:
        """Length every stored and query vector must have."""
        return self._dimension

    def count(self) -> int:
        """Number of live rows."""
        return self._snapshot.live

    # ---- writes -------------------------------------------------------------------------

    def upsert(self, records: Sequence[IndexRecord], vectors: Float32Array) -> None:
        """Insert or replace rows by chunk_id; the last occurrence wins inside one batch."""
        matrix = self._check_vectors(vectors, len(records))
        if not records:
            return
        last_index = {record.chunk_id: i for i, record in enumerate(records)}
        keep = sorted(last_index.values())
        new_rows = [row_of_record(records[i]) for i in keep]
        new_matrix = matrix[keep] if len(keep) < len(records) else matrix
        with self._lock:
            dead = [self._row_of[cid] for cid in last_index if cid in self._row_of]
            self._files.append(new_matrix, new_rows, dead)
            self._publish(new_rows, dead)
            self._maybe_compact()

    def update_records(self, records: Sequence[IndexRecord]) -> list[str]:
        """Replace the stored fields of chunks already held, keeping their vectors.

        How a KB version retires a chunk (its valid_to_seq) without embedding it again:
        the row is written anew from its own vector. Unknown chunk ids are ignored; returns
        the ids updated.
        """
        with self._lock:
            latest = {r.chunk_id: r for r in records if r.chunk_id in self._row_of}
            if not latest:
                return []
            dead = [self._row_of[chunk_id] for chunk_id in latest]
            # a copy out of the memory map: the append below may remap the file
            matrix = np.array(self._snapshot.matrix[dead], dtype=np.float32)
            new_rows = [row_of_record(record) for record in latest.values()]
            self._files.append(matrix, new_rows, dead)
            self._publish(new_rows, dead)
            self._maybe_compact()
            return list(latest)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Tombstone the rows of these chunk ids; unknown ids are ignored."""
        with self._lock:
            dead = sorted({self._row_of[c] for c in chunk_ids if c in self._row_of})
            self._delete_rows(dead)

    def delete_document(self, document_id: str) -> None:
        """Tombstone every row of one document."""
        with self._lock:
            snap = self._snapshot
            code = snap.vocab["document_id"].get(document_id)
            if code is None:
                return
            hit = snap.alive & (snap.codes["document_id"] == code + 1)
            self._delete_rows([int(r) for r in np.flatnonzero(hit)])

    def document_chunk_ids(self, document_id: str) -> set[str]:
        """The chunk ids of the live rows of one document."""
        snap = self._snapshot
        code = snap.vocab["document_id"].get(document_id)
        if code is None:
            return set()
        hit = snap.alive & (snap.codes["document_id"] == code + 1)
        return {snap.rows[int(r)][0] for r in np.flatnonzero(hit)}

    def close(self) -> None:
        """Stop the graph worker and save the graph; every write is already on disk."""
        self._ann.close()

    def sync_ann(self) -> None:
        """Build or extend the approximate index now (it is otherwise kept up in background)."""
        self._ann.sync()

    def ann_rows(self) -> int:
        """Rows the approximate index of the current matrix covers (0: exact search only)."""
        return self._ann.covered_rows(self._snapshot.generation)

    # ---- search -------------------------------------------------------------------------

    def search(
        self, vector: Float32Array, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Top-`limit` rows by cosine among the rows the filter allows; ties by chunk_id."""
        return self._snapshot.search(self._check_query(vector), search_filter, limit)

    # ---- internals ----------------------------------------------------------------------

    def _check_vectors(self, vectors: Any, expected_rows: int) -> Float32Array:
        return unit_rows(checked_rows(vectors, expected_rows, self._dimension))

    def _check_query(self, vector: Any) -> Float32Array:
        query = checked_query(vector, self._dimension)
        unit: Float32Array = unit_rows(query.reshape(1, -1))[0]
        return unit

    def _build_snapshot(self, rows: list[Row], deleted: set[int]) -> Snapshot:
        alive = np.ones(len(rows), dtype=np.bool_)
        if deleted:
            alive[sorted(deleted)] = False
        # the last row of a chunk id is its live one, unless the chunk was deleted
        self._row_of = dict(zip(map(itemgetter(0), rows), range(len(rows)), strict=True))
        for dead in np.flatnonzero(~alive).tolist():
            if self._row_of.get(rows[dead][0]) == dead:
                del self._row_of[rows[dead][0]]
        vocab: dict[str, dict[str, int]] = {name: {} for name in FILTER_FIELDS}
        return Snapshot(
            size=len(rows),
            matrix=self._files.map(len(rows)),
            alive=alive,
            live=int(alive.sum()),
            codes=encode_rows(vocab, rows),
            rows=rows,
            vocab=vocab,
            generation=self._files.generation,
            ann=self._ann if self._ann.available else None,
        )

    def _publish(self, new_rows: list[Row], dead: list[int]) -> None:
        """Swap in a new snapshot; the old one stays valid for searches still using it."""
        snap = self._snapshot
        added = len(new_rows)
        alive = np.concatenate([snap.alive, np.ones(added, dtype=np.bool_)])
        if dead:
            alive[dead] = False
        new_codes = encode_rows(snap.vocab, new_rows)
        codes = {
            name: np.concatenate([snap.codes[name], new_codes[name]]) for name in snap.codes
        }
        snap.rows.extend(new_rows)
        for offset, row in enumerate(new_rows):
            self._row_of[row[0]] = snap.size + offset
        self._snapshot = Snapshot(
            size=snap.size + added,
            matrix=self._files.map(snap.size + added) if added else snap.matrix,
            alive=alive,
            live=int(alive.sum()),
            codes=codes,
            rows=snap.rows,
            vocab=snap.vocab,
            generation=snap.generation,
            ann=snap.ann,
        )
        self._ann.changed(self._snapshot)

    def _delete_rows(self, dead: list[int]) -> None:
        if not dead:
            return
        self._files.append(np.empty((0, self._dimension), np.float32), [], dead)
        for row in dead:
            self._row_of.pop(self._snapshot.rows[row][0], None)
        self._publish([], dead)
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        snap = self._snapshot
        if snap.size - snap.live <= snap.size // 2:
            return
        live = np.flatnonzero(snap.alive)
        # Grouping rows by kb and document makes the candidates of a filter long contiguous
        # runs, which are scored in place instead of being copied out.
        keep = live[np.lexsort((live, snap.codes["document_id"][live], snap.codes["kb_id"][live]))]
        rows = [snap.rows[int(r)] for r in keep]
        self._files.rewrite(snap.matrix, keep, rows)
        # A fresh rows list and vocab: searches still holding the old snapshot keep theirs.
        self._snapshot = self._build_snapshot(rows, set())
        self._ann.changed(self._snapshot)
        logger.info("compacted dense store: %d -> %d rows", snap.size, len(rows))


