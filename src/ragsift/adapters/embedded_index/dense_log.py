"""On-disk layout of the dense store: a raw float32 vector file plus a JSON-lines row log."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import orjson
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_rows import AVAILABLE as READER_AVAILABLE
from ragsift.adapters.embedded_index.dense_rows import RowReader
from ragsift.domain.index_records import IndexRecord

logger = logging.getLogger(__name__)

# chunk_id, then the filter fields in FILTER_FIELDS order, then VERSION_FIELDS.
Row = tuple[
    str, str, str, str | None, str | None, str | None, str | None, str | None, int, int
]
# Coded through a vocabulary; `allowed_roles` holds the JSON list of a chunk's roles (None:
# unrestricted), so a role filter is one lookup over the distinct role sets.
FILTER_FIELDS = (
    "document_id", "kb_id", "source", "tenant_id", "dataset_id", "visibility", "allowed_roles"
)
VERSION_FIELDS = ("valid_from_seq", "valid_to_seq")  # stored as they are
# Rows logged before KB versions and roles: 7 values, valid in every version, unrestricted.
_OLD_ROW_LENGTH = 7

_META = "meta.json"
_COPY_BLOCK_ROWS = 8192


def row_of_record(record: IndexRecord) -> Row:
    """The persisted metadata of one record (its text is not needed for dense search)."""
    return (
        record.chunk_id,
        record.document_id,
        record.kb_id,
        record.source,
        record.tenant_id,
        record.dataset_id,
        record.visibility,
        roles_key(record.allowed_roles),
        record.valid_from_seq,
        record.valid_to_seq,
    )


def roles_key(roles: tuple[str, ...] | list[str]) -> str | None:
    """The canonical vocabulary value of a set of allowed roles (None: unrestricted)."""
    return json.dumps(sorted(set(roles)), ensure_ascii=False) if roles else None


def _row_of_json(item: list[str | int | None]) -> Row:
    if len(item) == _OLD_ROW_LENGTH:
        item = [*item, None, 0, 0]
    if len(item) != _OLD_ROW_LENGTH + 3 or not all(isinstance(v, str) for v in item[:3]) \
            or not all(v is None or isinstance(v, str) for v in item[3:8]) \
            or not all(type(v) is int for v in item[8:]):
        raise ValueError(f"malformed dense log row: {item!r}")
    return tuple(item)  # type: ignore[return-value]


_COLUMN_TYPES = [{str}] * 3 + [{str, type(None)}] * 5 + [{int}] * 2


def _rows_of_json(items: list[list[str | int | None]]) -> list[Row]:
    """Validated rows of one log entry; checked a column at a time (this runs on every open)."""
    if not items:
        return []
    if set(map(len, items)) != {len(_COLUMN_TYPES)}:  # rows of the old layout among them
        return [_row_of_json(item) for item in items]
    for column, allowed in zip(zip(*items, strict=True), _COLUMN_TYPES, strict=True):
        if not set(map(type, column)) <= allowed:
            raise ValueError("malformed dense log row in an entry")
    return list(map(tuple, items))  # type: ignore[arg-type]


class DenseFiles:
    """Generation-numbered files; compaction writes a new generation and flips meta.json.

    `follow`: another process writes them; this one only reads (nothing is created,
    repaired or truncated: a torn last entry is the writer's write in progress).
    """

    def __init__(self, directory: Path, dimension: int, follow: bool = False) -> None:
        self._directory = directory
        self._dimension = dimension
        self._follow = follow
        if not follow:
            directory.mkdir(parents=True, exist_ok=True)
        meta_path = directory / _META
        if meta_path.exists():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if int(meta["dimension"]) != dimension:
                raise ValueError(
                    f"dense store at {directory} has dimension {meta['dimension']}, not {dimension}"
                )
            self._generation = int(meta["generation"])
        else:
            self._generation = 0
            if not follow:
                self._write_meta()
        self._log_bytes = 0
        self._reader: tuple[int, RowReader] | None = None  # (generation, reader)

    @property
    def directory(self) -> Path:
        """The store's directory."""
        return self._directory

    @property
    def generation(self) -> int:
        """Number of the current generation (compaction starts the next one)."""
        return self._generation

    @property
    def vectors_path(self) -> Path:
        """Raw row-major float32 file of the current generation."""
        return self._directory / f"vectors-{self._generation}.f32"

    @property
    def log_path(self) -> Path:
        """Row metadata and tombstone log of the current generation."""
        return self._directory / f"log-{self._generation}.jsonl"

    @property
    def log_bytes(self) -> int:
        """Bytes of the current log replayed or written by this process (its committed end)."""
        return self._log_bytes

    def log_size(self) -> int:
        """Bytes of the current log on disk (0 when there is none, or no longer one)."""
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def meta_signature(self) -> tuple[int, int] | None:
        """(inode, mtime) of meta.json, which compaction replaces by rename; None without one."""
        try:
            status = (self._directory / _META).stat()
        except FileNotFoundError:
            return None
        return status.st_ino, status.st_mtime_ns

    def replay(self, start: int = 0, base_rows: int = 0) -> tuple[list[Row], set[int]]:
        """Rows logged from byte `start` on, in file order, and the row numbers tombstoned there.

        `base_rows` rows precede `start` (a checkpoint holds them); repairs a torn last write
        (a follower leaves it: it is the writer's write in progress, read once complete).
        """
        rows: list[Row] = []
        deleted: set[int] = set()
        good_bytes = start
        if self.log_path.exists():
            with self.log_path.open("rb") as log:
                log.seek(start)
                for line in log:
                    try:
                        entry = orjson.loads(line)
                        added = _rows_of_json(entry.get("add", []))
                        dead = [int(r) for r in entry.get("del", [])]
                    except (ValueError, TypeError, AttributeError):
                        if not self._follow:  # a follower meets the writer's write in progress
                            logger.warning("dropping a torn or invalid entry at the end of %s",
                                           log)
                        break
                    if not line.endswith(b"\n"):
                        break  # a write that stopped before its newline never completed
                    deleted.update(dead)
                    rows.extend(added)
                    good_bytes += len(line)
            if good_bytes < self.log_path.stat().st_size and not self._follow:
                os.truncate(self.log_path, good_bytes)
        self._log_bytes = good_bytes
        expected = (base_rows + len(rows)) * self._dimension * 4
        size = self.vectors_path.stat().st_size if self.vectors_path.exists() else 0
        if size < expected:
            raise RuntimeError(
                f"{self.vectors_path} holds {size} bytes but its log needs {expected}; "
                "the dense store is damaged and must be rebuilt"
            )
        if size > expected and not self._follow:
            # Vectors are written before their log entry, so surplus bytes are an unfinished batch.
            os.truncate(self.vectors_path, expected)
        return rows, deleted

    def append(self, matrix: NDArray[np.float32], rows: list[Row], dead: list[int]) -> None:
        """Persist one write batch: vectors first, then one log line that commits it.

        A failed write (a full disk) is cut off again, so it gives back the room it took.
        """
        sizes = [(path, path.stat().st_size if path.exists() else 0)
                 for path in (self.vectors_path, self.log_path)]
        entry: dict[str, object] = {}
        if rows:
            entry["add"] = rows
        if dead:
            entry["del"] = dead
        line = orjson.dumps(entry) + b"\n"
        try:
            if matrix.size:
                with self.vectors_path.open("ab") as vectors:
                    vectors.write(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())
            with self.log_path.open("ab") as log:
                log.write(line)
        except BaseException:
            for path, size in sizes:
                try:
                    if path.exists():
                        os.truncate(path, size)
                except OSError:  # replay() cuts an unfinished batch off at the next open
                    logger.warning("could not cut a failed write off %s", path)
            raise
        self._log_bytes += len(line)

    def reader(self) -> RowReader | None:
        """A reader of the current generation's vector file (one per generation); None
        before the file exists or where the platform has no preadv."""
        cached = self._reader
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        if not READER_AVAILABLE or not self.vectors_path.exists():
            return None
        reader = RowReader(self.vectors_path, self._dimension)
        self._reader = (self._generation, reader)
        return reader

    def map(self, rows: int) -> NDArray[np.float32]:
        """A read-only memory map of the first `rows` vectors (remapped after every growth)."""
        if rows == 0:
            return np.empty((0, self._dimension), dtype=np.float32)
        return np.memmap(
            self.vectors_path, dtype=np.float32, mode="r", shape=(rows, self._dimension)
        )

    def rewrite(self, matrix: NDArray[np.float32], keep: NDArray[np.intp], rows: list[Row]) -> None:
        """Write `matrix[keep]` with its `rows` as the next generation and switch to it."""
        old_vectors, old_log = self.vectors_path, self.log_path
        self._generation += 1
        self._log_bytes = 0
        for path in (self.vectors_path, self.log_path):
            path.unlink(missing_ok=True)
        with self.vectors_path.open("wb") as vectors:
            # Blocks bound the memory a compaction needs, whatever the size of the store.
            for start in range(0, keep.size, _COPY_BLOCK_ROWS):
                block = matrix[keep[start : start + _COPY_BLOCK_ROWS]]
                vectors.write(np.ascontiguousarray(block, dtype=np.float32).tobytes())
        self.append(np.empty((0, self._dimension), np.float32), rows, [])
        self._write_meta()
        for path in (old_vectors, old_log):
            try:
                path.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - e.g. a platform that locks mapped files
                logger.warning("could not remove old dense store file %s", path)

    def _write_meta(self) -> None:
        # Write-then-rename makes the switch to a new generation atomic.
        meta = {"dimension": self._dimension, "generation": self._generation}
        tmp = self._directory / (_META + ".tmp")
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, self._directory / _META)
