"""Exact cosine search over an append-only, memory-mapped float32 matrix on disk."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_ann import AnnIndex, AnnSettings
from ragsift.adapters.embedded_index.dense_columns import (
    Columns,
    checkpoint_path,
    load_checkpoint,
    remove_checkpoints,
    save_checkpoint,
)
from ragsift.adapters.embedded_index.dense_log import DenseFiles, Row, row_of_record
from ragsift.adapters.embedded_index.dense_snapshot import ApproximateIndex, Snapshot
from ragsift.adapters.vector_checks import checked_query, checked_rows, unit_rows
from ragsift.domain.errors import IndexReadOnly
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

logger = logging.getLogger(__name__)

Float32Array = NDArray[np.float32]

# A checkpoint's cost grows with the store and a replayed tail's with the rows changed since
# the last one, so a new one is written once the changes reach 1/20 of the rows (or the
# store's `checkpoint_rows`, whichever is more): an open replays at most that share.
_CHECKPOINT_SHARE = 20
CHECKPOINT_ROWS = 2_000  # the default of RAGSIFT_DENSE_CHECKPOINT_ROWS
# A follower's open that meets a compaction (meta.json flipped, old files removed) retries.
_FOLLOW_OPEN_TRIES = 5


class DenseMatrixStore:
    """Cosine top-k with filters applied before ranking; survives restart.

    Exact for a kb under `ann.min_rows` live rows and for filters allowing at most
    `ann.exact_max_rows` rows; otherwise the kb's own HNSW graph (dense_ann) proposes
    candidates that are re-scored exactly.

    `follow`: another process (the writer) owns the directory; this store never writes it
    and, before each search, takes in what the writer committed since (log entries, a
    compaction's new generation, a newer graph file), so a chunk the writer has written is
    found by the next search here.
    """

    def __init__(self, directory: Path, dimension: int, ann: AnnSettings | None = None,
                 checkpoint_rows: int = CHECKPOINT_ROWS, follow: bool = False) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if checkpoint_rows < 1:
            raise ValueError(f"checkpoint_rows must be positive, got {checkpoint_rows}")
        self._checkpoint_rows = checkpoint_rows
        self._dimension = dimension
        self._lock = threading.Lock()
        self._follow = follow
        self._directory = Path(directory)
        self._files = DenseFiles(self._directory, dimension, follow)
        self._ann = AnnIndex(self._directory, dimension, ann or AnnSettings(),
                             lambda: self._snapshot, follow=follow)
        # chunk id -> its live row; built on the first write (a searching process needs none)
        self._row_index: dict[str, int] | None = None
        self._meta = self._files.meta_signature()
        self._snapshot, self._changes = self._follow_open() if follow else self._open()
        self._ann.opened(self._snapshot)
        logger.debug("opened dense store %s with %d live rows", directory, self._snapshot.live)

    @property
    def dimension(self) -> int:
        """Length every stored and query vector must have."""
        return self._dimension

    def count(self) -> int:
        """Number of live rows."""
        self.refresh()
        return self._snapshot.live

    def refresh(self) -> None:
        """Follower: take in the writer's commits since the last look (two stats when none)."""
        if not self._follow:
            return
        if self._files.meta_signature() != self._meta:
            with self._lock:
                self._follow_generation()
        elif self._files.log_size() > self._files.log_bytes:
            with self._lock:
                try:
                    snap = self._snapshot
                    tail, deleted = self._files.replay(self._files.log_bytes,
                                                       base_rows=snap.size)
                    if tail or deleted:
                        self._snapshot = self._extended(snap, tail, sorted(deleted))
                except (FileNotFoundError, RuntimeError):
                    # the writer compacted meanwhile and removed these files: the next
                    # generation has every live row
                    if self._files.meta_signature() == self._meta:
                        raise
                    self._follow_generation()
        self._ann.refresh(self._snapshot)

    def _follow_generation(self) -> None:
        """Follower, lock held: open the generation meta.json names now (after a compaction)."""
        if self._files.meta_signature() == self._meta:
            return
        self._files = DenseFiles(self._directory, self._dimension, follow=True)
        self._meta = self._files.meta_signature()
        self._snapshot, _ = self._follow_open()
        self._ann.opened(self._snapshot)

    # ---- writes -------------------------------------------------------------------------

    def upsert(self, records: Sequence[IndexRecord], vectors: Float32Array) -> None:
        """Insert or replace rows by chunk_id; the last occurrence wins inside one batch."""
        self._check_writable()
        matrix = self._check_vectors(vectors, len(records))
        if not records:
            return
        last_index = {record.chunk_id: i for i, record in enumerate(records)}
        keep = sorted(last_index.values())
        new_rows = [row_of_record(records[i]) for i in keep]
        new_matrix = matrix[keep] if len(keep) < len(records) else matrix
        with self._lock:
            row_of = self._rows_by_id()
            dead = [row_of[cid] for cid in last_index if cid in row_of]
            self._files.append(new_matrix, new_rows, dead)
            self._publish(new_rows, dead)
            self._after_write()

    def update_records(self, records: Sequence[IndexRecord]) -> list[str]:
        """Replace the stored fields of chunks already held, keeping their vectors.

        How a KB version retires a chunk (its valid_to_seq) without embedding it again:
        the row is written anew from its own vector. Unknown chunk ids are ignored; returns
        the ids updated.
        """
        self._check_writable()
        with self._lock:
            row_of = self._rows_by_id()
            latest = {r.chunk_id: r for r in records if r.chunk_id in row_of}
            if not latest:
                return []
            dead = [row_of[chunk_id] for chunk_id in latest]
            # a copy out of the memory map: the append below may remap the file
            matrix = np.array(self._snapshot.matrix[dead], dtype=np.float32)
            new_rows = [row_of_record(record) for record in latest.values()]
            self._files.append(matrix, new_rows, dead)
            self._publish(new_rows, dead)
            self._after_write()
            return list(latest)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Tombstone the rows of these chunk ids; unknown ids are ignored."""
        self._check_writable()
        with self._lock:
            row_of = self._rows_by_id()
            dead = sorted({row_of[c] for c in chunk_ids if c in row_of})
            self._delete_rows(dead)

    def delete_document(self, document_id: str) -> None:
        """Tombstone every row of one document."""
        self._check_writable()
        with self._lock:
            snap = self._snapshot
            code = snap.vocab.index["document_id"].get(document_id)
            if code is None:
                return
            hit = snap.alive & (snap.codes["document_id"] == code + 1)
            self._delete_rows([int(r) for r in np.flatnonzero(hit)])

    def document_chunk_ids(self, document_id: str) -> set[str]:
        """The chunk ids of the live rows of one document."""
        self.refresh()
        snap = self._snapshot
        code = snap.vocab.index["document_id"].get(document_id)
        if code is None:
            return set()
        hit = snap.alive & (snap.codes["document_id"] == code + 1)
        return {snap.ids[int(r)] for r in np.flatnonzero(hit)}

    def close(self) -> None:
        """Stop the graph worker, save the graph and, if due, a checkpoint of the rows.

        Every write is already on disk: a process that never closes loses nothing.
        """
        self._ann.close()
        if self._follow:
            return
        with self._lock:
            self._maybe_checkpoint()

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
        self.refresh()
        return self._snapshot.search(self._check_query(vector), search_filter, limit)

    def excluded_documents(self, search_filter: SearchFilter) -> frozenset[str] | None:
        """Snapshot.excluded_documents on the current rows."""
        return self.whitelist_plan(search_filter)[0]

    def whitelist_plan(self, search_filter: SearchFilter) -> tuple[frozenset[str] | None, float]:
        """Snapshot.whitelist_plan on the current rows."""
        self.refresh()
        return self._snapshot.whitelist_plan(search_filter)

    # ---- internals ----------------------------------------------------------------------

    def _check_vectors(self, vectors: Any, expected_rows: int) -> Float32Array:
        return unit_rows(checked_rows(vectors, expected_rows, self._dimension))

    def _check_query(self, vector: Any) -> Float32Array:
        query = checked_query(vector, self._dimension)
        unit: Float32Array = unit_rows(query.reshape(1, -1))[0]
        return unit

    def _check_writable(self) -> None:
        if self._follow:
            raise IndexReadOnly(f"the dense store {self._directory} is followed read-only here; "
                                "its writer is another process")

    def _follow_open(self) -> tuple[Snapshot, int]:
        """`_open` for a follower, which changes no file: a compaction of the writer's in
        between (meta.json flipped, the old generation's files removed) makes it retry."""
        for _ in range(_FOLLOW_OPEN_TRIES - 1):
            try:
                opened = self._open()
            except (FileNotFoundError, RuntimeError, ValueError):
                opened = None
            now = self._files.meta_signature()
            if opened is not None and now == self._meta:
                return opened
            self._files = DenseFiles(self._directory, self._dimension, follow=True)
            self._meta = now
        return self._open()

    def _open(self) -> tuple[Snapshot, int]:
        """The snapshot of what is on disk: the checkpoint, then the log entries after it."""
        files = self._files
        path = checkpoint_path(files.directory, files.generation)
        base = load_checkpoint(path, files.generation, files.log_size()) or Columns.empty()
        if not self._follow:
            remove_checkpoints(files.directory, keep=path)
        tail, deleted = files.replay(start=base.log_bytes, base_rows=base.size)
        snap = self._snapshot_of(base, self._ann if self._ann.available else None)
        return self._extended(snap, tail, sorted(deleted)), len(tail) + len(deleted)

    def _snapshot_of(self, columns: Columns, ann: ApproximateIndex | None) -> Snapshot:
        """A snapshot of the current generation holding exactly `columns`' rows."""
        return Snapshot(
            size=columns.size,
            matrix=self._files.map(columns.size),
            alive=columns.alive,
            live=int(columns.alive.sum()),
            codes=columns.codes,
            ids=columns.ids,
            vocab=columns.vocab,
            generation=self._files.generation,
            ann=ann,
            reader=self._files.reader(),
        )

    def _extended(self, snap: Snapshot, new_rows: list[Row], dead: list[int]) -> Snapshot:
        """`snap` with `new_rows` appended and the rows `dead` tombstoned."""
        added = len(new_rows)
        new_codes = snap.vocab.encode(new_rows)
        snap.ids.extend(row[0] for row in new_rows)
        alive = np.concatenate([snap.alive, np.ones(added, dtype=np.bool_)])
        if dead:
            alive[dead] = False
        codes = {name: np.concatenate([snap.codes[name], new_codes[name]]) for name in new_codes}
        return Snapshot(
            size=snap.size + added,
            matrix=self._files.map(snap.size + added) if added else snap.matrix,
            alive=alive,
            live=int(alive.sum()),
            codes=codes,
            ids=snap.ids,
            vocab=snap.vocab,
            generation=snap.generation,
            ann=snap.ann,
            reader=snap.reader or self._files.reader(),
            spans=[snap.spans[0].written(snap.codes["document_id"][: snap.size],
                                         snap.alive[: snap.size], new_codes["document_id"],
                                         dead)]
            if snap.spans else [],
        )

    def _rows_by_id(self) -> dict[str, int]:
        """Chunk id -> live row (a chunk id has at most one), built on first need."""
        if self._row_index is None:
            snap = self._snapshot
            live = np.flatnonzero(snap.alive).tolist()
            self._row_index = dict(zip(compress(snap.ids[: snap.size], snap.alive.tolist()),
                                       live, strict=True))
        return self._row_index

    def _publish(self, new_rows: list[Row], dead: list[int]) -> None:
        """Swap in a new snapshot; the old one stays valid for searches still using it."""
        row_of = self._rows_by_id()
        for row in dead:
            row_of.pop(self._snapshot.ids[row], None)
        size = self._snapshot.size
        self._snapshot = self._extended(self._snapshot, new_rows, dead)
        for offset, row_fields in enumerate(new_rows):
            row_of[row_fields[0]] = size + offset
        self._changes += len(new_rows) + len(dead)
        self._ann.changed(self._snapshot)

    def _delete_rows(self, dead: list[int]) -> None:
        if not dead:
            return
        self._files.append(np.empty((0, self._dimension), np.float32), [], dead)
        self._publish([], dead)
        self._after_write()

    def _after_write(self) -> None:
        self._maybe_compact()
        self._maybe_checkpoint()

    def _maybe_checkpoint(self) -> None:
        snap = self._snapshot
        if self._changes < max(self._checkpoint_rows, snap.size // _CHECKPOINT_SHARE):
            return
        columns = Columns(snap.ids, snap.codes, snap.alive, snap.vocab, self._files.log_bytes)
        try:
            save_checkpoint(checkpoint_path(self._files.directory, snap.generation),
                            snap.generation, snap.size, columns)
        except OSError as error:  # the log has it all: a later open replays more, nothing lost
            logger.warning("could not write the dense checkpoint: %s", error)
            return
        self._changes = 0

    def _maybe_compact(self) -> None:
        snap = self._snapshot
        if snap.size - snap.live <= snap.size // 2:
            return
        live = np.flatnonzero(snap.alive)
        # Grouping rows by kb and document makes the candidates of a filter long contiguous
        # runs, which are scored in place instead of being copied out.
        keep = live[np.lexsort((live, snap.codes["document_id"][live], snap.codes["kb_id"][live]))]
        rows = [snap.row(int(r)) for r in keep.tolist()]
        self._files.rewrite(snap.matrix, keep, rows)
        remove_checkpoints(self._files.directory)
        # Fresh ids and vocab: searches still holding the old snapshot keep theirs.
        self._snapshot = self._extended(self._snapshot_of(Columns.empty(), snap.ann), rows, [])
        self._row_index = None
        self._changes = len(rows)
        self._ann.changed(self._snapshot)
        logger.info("compacted dense store: %d -> %d rows", snap.size, len(rows))
