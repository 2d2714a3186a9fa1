"""Reads a few rows of the dense store's vector file without mapping them into the process.

Scoring a graph search's candidates, or a small whitelist's rows, touches a few hundred
scattered rows. Through the memory map each touch of a cached file maps far more than the row
(the kernel maps around the faulting page: 60 random 1.5 KB rows mapped 15 MB on this
machine), so a process that has served a hundred searches over 1M rows holds 1 GB of the
matrix as resident memory. `preadv` copies just the rows out of the page cache, one call per
contiguous run, and maps nothing.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

Float32Array = NDArray[np.float32]
IntpArray = NDArray[np.intp]

# Above this many rows a product over the mapping (whose pages a big scan maps anyway) costs
# less than a system call per run.
READ_MAX_ROWS = 2_048
AVAILABLE = hasattr(os, "preadv")


class RowReader:
    """Rows of one vector file by row number; safe to share between threads."""

    def __init__(self, path: Path, dimension: int) -> None:
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        # The descriptor lives as long as the snapshots that hold this reader: a compaction
        # unlinks the file, and searches still running on the old generation read on.
        weakref.finalize(self, os.close, self._fd)
        self._dimension = dimension
        self._row_bytes = dimension * np.dtype(np.float32).itemsize

    def read(self, rows: IntpArray, spans: Sequence[tuple[int, int]]) -> Float32Array:
        """`matrix[rows]` for sorted `rows` whose contiguous runs are `rows[first:end]` for
        each (first, end) of `spans` (Candidates.spans)."""
        out = np.empty((rows.size, self._dimension), dtype=np.float32)
        for start, end in spans:
            wanted = (end - start) * self._row_bytes
            got = os.preadv(self._fd, [out[start:end].data],
                            int(rows[start]) * self._row_bytes)
            if got != wanted:
                raise OSError(f"short read of the dense vectors: {got} of {wanted} bytes at "
                              f"row {int(rows[start])}")
        return out
