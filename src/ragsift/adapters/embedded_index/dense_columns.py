"""The dense store's row metadata as columns, and a checkpoint of them that an open reads.

Replaying a million-row JSON log costs ~3 CPU-s and ~0.6 GB of Python tuples; the columns are
coded int32 arrays, a vocabulary per filter field and the list of chunk ids, and a checkpoint
saves them so that an open replays only the log entries written after it. The log stays the
source of truth: a checkpoint that is missing, of another generation or unreadable is ignored
(the whole log is replayed), and it is written to a temporary file and renamed into place.
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import cast

import numpy as np
import orjson
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_log import FILTER_FIELDS, VERSION_FIELDS, Row
from ragsift.faults import crash_point

logger = logging.getLogger(__name__)

Int32Array = NDArray[np.int32]
BoolArray = NDArray[np.bool_]

_FORMAT = 1
CODE_FIELDS = FILTER_FIELDS + VERSION_FIELDS


class Vocabulary:
    """Value <-> code per filter field; append-only until compaction starts a new one.

    Writers append under the store's lock; a search reads codes its snapshot already holds,
    so it never sees a value half-added.
    """

    def __init__(self, values: dict[str, list[str]] | None = None) -> None:
        self.values: dict[str, list[str]] = values or {name: [] for name in FILTER_FIELDS}
        self.index: dict[str, dict[str, int]] = {
            name: dict(zip(column, range(len(column)), strict=True))
            for name, column in self.values.items()
        }

    def value(self, name: str, code_plus_one: int) -> str | None:
        """The value a stored code stands for (code 0: None)."""
        return self.values[name][code_plus_one - 1] if code_plus_one else None

    def encode(self, rows: list[Row]) -> dict[str, Int32Array]:
        """Per code field, the rows' codes (filter fields: code + 1, 0 for None), growing it."""
        codes: dict[str, Int32Array] = {}
        for pos, name in enumerate(FILTER_FIELDS, start=1):
            index, values = self.index[name], self.values[name]
            # positions of FILTER_FIELDS hold text; C-level loops: this runs on every write
            column = cast(list[str | None], [row[pos] for row in rows])
            for value in dict.fromkeys(column):  # new values get codes in first-seen order
                if value is not None and value not in index:
                    index[value] = len(values)
                    values.append(value)
            lookup = cast(Callable[[str | None, int], int], index.get)
            found = map(lookup, column, repeat(-1))  # None is no key: -1, stored as 0
            codes[name] = np.fromiter(found, dtype=np.int32, count=len(rows)) + np.int32(1)
        for pos, name in enumerate(VERSION_FIELDS, start=1 + len(FILTER_FIELDS)):
            codes[name] = np.fromiter((row[pos] for row in rows), dtype=np.int32, count=len(rows))
        return codes


@dataclass(frozen=True, slots=True)
class Columns:
    """Rows `[0, size)` of one generation as columns, and the log bytes they cover."""

    ids: list[str]
    codes: dict[str, Int32Array]
    alive: BoolArray
    vocab: Vocabulary
    log_bytes: int

    @property
    def size(self) -> int:
        """Number of rows, live and tombstoned."""
        return len(self.ids)

    @classmethod
    def empty(cls) -> Columns:
        """No rows: what an open without a checkpoint starts from."""
        codes = {name: np.empty(0, dtype=np.int32) for name in CODE_FIELDS}
        return cls([], codes, np.empty(0, dtype=np.bool_), Vocabulary(), 0)


def checkpoint_path(directory: Path, generation: int) -> Path:
    """Where the checkpoint of one generation lives."""
    return directory / f"columns-{generation}.npz"


def save_checkpoint(path: Path, generation: int, size: int, columns: Columns) -> None:
    """Write the first `size` rows of `columns` (temp + rename: a reader never sees half)."""
    header = {"format": _FORMAT, "generation": generation, "rows": size,
              "log_bytes": columns.log_bytes}
    arrays: dict[str, NDArray[np.generic]] = {
        "header": _bytes(orjson.dumps(header)),
        "ids": _bytes(orjson.dumps(columns.ids[:size])),
        # a copy of each list: a writer may append to them while this runs
        "values": _bytes(orjson.dumps({k: list(v) for k, v in columns.vocab.values.items()})),
        "alive": columns.alive[:size],
    }
    arrays.update({f"code_{name}": columns.codes[name][:size] for name in CODE_FIELDS})
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as out:
        np.savez(out, allow_pickle=False, **arrays)
    crash_point("dense_checkpoint")
    os.replace(tmp, path)


def load_checkpoint(path: Path, generation: int, log_size: int) -> Columns | None:
    """The checkpointed columns, or None when there is no usable checkpoint (logged why)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as saved:
            header = orjson.loads(saved["header"].tobytes())
            if header.get("format") != _FORMAT or header.get("generation") != generation:
                raise ValueError(f"checkpoint of another format or generation: {header}")
            size, log_bytes = int(header["rows"]), int(header["log_bytes"])
            if not 0 <= log_bytes <= log_size:
                raise ValueError(f"covers {log_bytes} log bytes, the log has {log_size}")
            ids = orjson.loads(saved["ids"].tobytes())
            values = orjson.loads(saved["values"].tobytes())
            codes = {name: saved[f"code_{name}"] for name in CODE_FIELDS}
            alive = saved["alive"]
        vocab = Vocabulary({name: values[name] for name in FILTER_FIELDS})
        _check(size, ids, codes, alive, vocab)
    # a zip's CRC check finds damage inside a member too
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
        logger.warning("ignoring the dense checkpoint %s (%s); replaying the whole log",
                       path, error)
        return None
    return Columns(ids, codes, alive, vocab, log_bytes)


def remove_checkpoints(directory: Path, keep: Path | None = None) -> None:
    """Delete checkpoints (and unfinished ones) other than `keep`."""
    for path in [*directory.glob("columns-*.npz"), *directory.glob("columns-*.npz.tmp")]:
        if path != keep:
            path.unlink(missing_ok=True)


def _check(size: int, ids: object, codes: dict[str, NDArray[np.generic]], alive: NDArray[
        np.generic], vocab: Vocabulary) -> None:
    # type sets, not loops over the values: C-level, this runs on every open
    if not isinstance(ids, list) or len(ids) != size or not set(map(type, ids)) <= {str}:
        raise ValueError("chunk ids do not match the row count")
    if not all(set(map(type, column)) <= {str} for column in vocab.values.values()):
        raise ValueError("a vocabulary holds a value that is not text")
    if any(len(vocab.index[name]) != len(column) for name, column in vocab.values.items()):
        raise ValueError("a vocabulary holds a value twice")
    if alive.dtype != np.bool_ or alive.shape != (size,):
        raise ValueError("alive mask of the wrong type or length")
    for name, column in codes.items():
        if column.dtype != np.int32 or column.shape != (size,):
            raise ValueError(f"column {name} of the wrong type or length")
        if name in vocab.values and size and not (
                int(column.min()) >= 0 and int(column.max()) <= len(vocab.values[name])):
            raise ValueError(f"column {name} holds codes outside its vocabulary")


def _bytes(data: bytes) -> NDArray[np.uint8]:
    return np.frombuffer(data, dtype=np.uint8)
