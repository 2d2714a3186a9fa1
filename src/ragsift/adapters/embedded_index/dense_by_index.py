"""Scores of scattered rows of the dense matrix in one native call, without copying them.

An exact scan of a filter whose rows are scattered (a metadata filter keeps whole documents,
runs of ~10 rows) used to copy the rows out in 256-row blocks and multiply each: at 19,000
rows of 384 floats, 6.6-7.0 ms against 4.5-5.0 ms for faiss's `fvec_inner_products_by_idx`,
which reads each row where it lies (docs/benchmarks.md, issue 36). faiss is the `ann` extra:
without it the caller gathers as before.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.faiss_simd import import_faiss

Float32Array = NDArray[np.float32]
IntpArray = NDArray[np.intp]

# Below this many rows the block copies cost little and the small calls stay BLAS's.
BY_INDEX_MIN_ROWS = 4_096

_lock = threading.Lock()
_faiss: list[Any | None] = []  # [module or None] once looked up


def _lib() -> Any | None:
    if not _faiss:
        with _lock:
            if not _faiss:
                try:
                    _faiss.append(import_faiss())
                except ImportError:  # the ann extra is absent: the caller gathers
                    _faiss.append(None)
    return _faiss[0]


def scores_by_index(matrix: Float32Array, rows: IntpArray,
                    query: Float32Array) -> Float32Array | None:
    """`matrix[rows] @ query` read in place; None when faiss is missing or the arrays are
    not the plain layout its call needs (the caller then gathers)."""
    faiss = _lib()
    if faiss is None or rows.size == 0 or matrix.dtype != np.float32 or \
            not matrix.flags.c_contiguous or matrix.ndim != 2:
        return None
    # faiss reads each id unchecked: every one must be a row of the matrix
    if int(rows[0]) < 0 or int(rows[-1]) >= matrix.shape[0] or \
            (rows.size > 1 and bool(np.any(np.diff(rows) <= 0))):
        return None
    ids = np.ascontiguousarray(rows, dtype=np.int64)
    vector = np.ascontiguousarray(query, dtype=np.float32)
    if vector.size != matrix.shape[1]:
        return None
    out = np.empty(ids.size, dtype=np.float32)
    faiss.fvec_inner_products_by_idx(faiss.swig_ptr(out), faiss.swig_ptr(vector),
                                     faiss.swig_ptr(matrix), faiss.swig_ptr(ids),
                                     matrix.shape[1], 1, ids.size)
    return out
