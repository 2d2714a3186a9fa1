"""The HNSW graph file of the dense store (faiss-cpu): build, save crash-safely, verify, map.

faiss was chosen over usearch and hnswlib (docs/benchmarks.md, "Approximate dense index"):
its HNSW applies an id bitmap inside the graph search from C++, so a broad filter needs no
oversampling guesswork; ids are the matrix's own row numbers, so no key map is kept; and it
memory-maps a saved index. The graph stores 8-bit scalar-quantised vectors (a quarter of the
matrix); results are re-scored exactly from the float32 matrix, so quantisation only affects
which rows are found, never their scores.
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

Float32Array = NDArray[np.float32]

_SUFFIX = ".faiss"
_TRAIN_ROWS = 65_536
_VERIFY_ROWS = 16
# SQ8 reconstructions of unit vectors sit at cosine ~0.999 to the original; a file built from
# other vectors (a stale generation, a foreign file) falls far below this.
_VERIFY_MIN_COSINE = 0.98
_warned_missing = False


def load_faiss() -> Any | None:
    """The faiss module, or None (then the store stays exact and says so once)."""
    global _warned_missing
    try:
        return importlib.import_module("faiss")
    except ImportError as exc:
        if not _warned_missing:
            _warned_missing = True
            logger.warning(
                "approximate dense index unavailable (%s): dense search stays exact; "
                "pip install 'ragsift[ann]'", exc)
        return None


@dataclass(frozen=True, slots=True)
class GraphParams:
    """Construction parameters of a new graph."""

    connectivity: int
    ef_construction: int


def ann_path(directory: Path, generation: int) -> Path:
    """The graph file of one matrix generation."""
    return directory / f"ann-{generation}{_SUFFIX}"


def new_graph(faiss: Any, dimension: int, params: GraphParams, sample: Float32Array) -> Any:
    """An empty HNSW-SQ8 inner-product graph, its quantiser trained on `sample`."""
    index = faiss.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_8bit, params.connectivity,
                              faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = params.ef_construction
    train = np.ascontiguousarray(sample[:_TRAIN_ROWS], dtype=np.float32)
    index.train(train)
    return index


def save_graph(faiss: Any, index: Any, path: Path) -> None:
    """Write temp + fsync + rename: a kill at any point leaves the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    with tmp.open("rb") as written:
        os.fsync(written.fileno())
    os.replace(tmp, path)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_graph(faiss: Any, path: Path, matrix: Float32Array, dimension: int,
               mapped: bool, follow: bool = False) -> Any | None:
    """The saved graph if it is readable and built from this matrix; None otherwise.

    `follow`: a reader of another process's files, for which a mismatch is usually a graph
    saved after its view of the matrix (tried again later): logged at debug level only.
    """
    report = logger.debug if follow else logger.warning
    if not path.exists():
        return None
    flags = faiss.IO_FLAG_MMAP_IFC if mapped else 0
    try:
        index = faiss.read_index(str(path), flags)
    except RuntimeError as exc:  # faiss reports unreadable files as RuntimeError
        report("approximate dense index %s unreadable (%s); rebuilding", path, exc)
        return None
    problem = _mismatch(index, matrix, dimension)
    if problem is not None:
        report("approximate dense index %s %s; rebuilding", path, problem)
        return None
    return index


def _mismatch(index: Any, matrix: Float32Array, dimension: int) -> str | None:
    if int(index.d) != dimension:
        return f"has dimension {index.d}, not {dimension}"
    covered = int(index.ntotal)
    if covered > matrix.shape[0]:
        return f"holds {covered} rows, more than the matrix's {matrix.shape[0]}"
    if covered == 0:
        return None
    # The first and last rows and a spread between: a graph of another matrix fails here.
    probe = np.unique(np.linspace(0, covered - 1, _VERIFY_ROWS).astype(np.int64))
    stored = np.stack([index.reconstruct(int(row)) for row in probe]).astype(np.float32)
    original = np.asarray(matrix[probe], dtype=np.float32)
    cosine = np.sum(stored * original, axis=1) / np.maximum(
        np.linalg.norm(stored, axis=1) * np.linalg.norm(original, axis=1), 1e-12)
    if float(cosine.min()) < _VERIFY_MIN_COSINE:
        return "does not match the matrix it claims to index"
    return None


def remove_other_graphs(directory: Path, generation: int) -> None:
    """Delete graph files of other generations and unfinished temp files."""
    keep = ann_path(directory, generation).name
    for path in directory.glob(f"ann-*{_SUFFIX}*"):
        if path.name != keep:
            path.unlink(missing_ok=True)
