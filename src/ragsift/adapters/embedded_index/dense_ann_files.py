"""The HNSW graph files of the dense store (faiss-cpu): build, save crash-safely, verify, map.

faiss was chosen over usearch and hnswlib (docs/benchmarks.md, "Approximate dense index"):
its HNSW applies an id bitmap inside the graph search from C++, so a broad filter needs no
oversampling guesswork, and it memory-maps a saved index. One graph per kb (every search is
within one kb): an `IndexIDMap` over HNSW whose ids are the matrix's own row numbers, so the
store's row bitmap filters it directly. The graph stores 8-bit scalar-quantised vectors (a
quarter of the matrix); results are re-scored exactly from the float32 matrix, so
quantisation only affects which rows are found, never their scores.

A file is named by the matrix generation, a key of its kb and the row watermark it covers
(`ann-{generation}-{key}-{covered}.faiss`): it holds every row of its kb below `covered`, so
a saved file says by its name alone what it is sound for.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.faiss_simd import import_faiss

logger = logging.getLogger(__name__)

Float32Array = NDArray[np.float32]
IntpArray = NDArray[np.intp]

_SUFFIX = ".faiss"
_NAME = re.compile(r"^ann-(\d+)-([0-9a-f]{16})-(\d+)\.faiss$")
TRAIN_ROWS = 65_536  # rows a graph's quantiser is trained on
_VERIFY_ROWS = 16
# SQ8 reconstructions of unit vectors sit at cosine ~0.999 to the original; a file built from
# other vectors (a stale generation, a foreign file) falls far below this.
_VERIFY_MIN_COSINE = 0.98
_warned_missing = False


def load_faiss() -> Any | None:
    """The faiss module, or None (then the store stays exact and says so once)."""
    global _warned_missing
    try:
        return import_faiss()
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


def graph_key(kb_id: str) -> str:
    """A file-name-safe key of a kb id (ids may hold any character)."""
    return hashlib.sha256(kb_id.encode("utf-8")).hexdigest()[:16]


def ann_path(directory: Path, generation: int, key: str, covered: int) -> Path:
    """The graph file of one kb's rows below `covered` in one matrix generation."""
    return directory / f"ann-{generation}-{key}-{covered}{_SUFFIX}"


def graph_files(directory: Path, generation: int) -> dict[str, tuple[int, Path]]:
    """Per kb key, the covered watermark and path of its newest graph file of `generation`."""
    newest: dict[str, tuple[int, Path]] = {}
    # a listing, not a glob: a follower looks before every search (a few microseconds)
    for name in os.listdir(directory):
        match = _NAME.match(name)
        if match is None or int(match.group(1)) != generation:
            continue
        key, covered = match.group(2), int(match.group(3))
        if key not in newest or covered > newest[key][0]:
            newest[key] = (covered, directory / name)
    return newest


def remove_other_graphs(directory: Path, generation: int) -> None:
    """Delete graph files of other generations, older files of a kb, unfinished temps."""
    keep = {path for _, path in graph_files(directory, generation).values()}
    for path in directory.glob(f"ann-*{_SUFFIX}*"):
        if path not in keep:
            path.unlink(missing_ok=True)


def new_graph(faiss: Any, dimension: int, params: GraphParams, sample: Float32Array) -> Any:
    """An empty id-mapped HNSW-SQ8 inner-product graph, its quantiser trained on `sample`."""
    inner = faiss.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_8bit, params.connectivity,
                              faiss.METRIC_INNER_PRODUCT)
    inner.hnsw.efConstruction = params.ef_construction
    inner.train(np.ascontiguousarray(sample[:TRAIN_ROWS], dtype=np.float32))
    return faiss.IndexIDMap(inner)


def hnsw_of(faiss: Any, index: Any) -> Any:
    """The HNSW structure inside an id-mapped graph (its build effort is set there)."""
    return faiss.downcast_index(index.index).hnsw


def save_graph(faiss: Any, index: Any, path: Path) -> None:
    """Write temp + fsync + rename: a kill at any point leaves the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    with tmp.open("rb") as written:
        os.fsync(written.fileno())
    os.replace(tmp, path)
    sync_directory(path.parent)


def rename_graph(old: Path, new: Path) -> None:
    """A graph whose rows did not change, saved for a higher watermark by renaming it."""
    os.replace(old, new)
    sync_directory(new.parent)


def sync_directory(directory: Path) -> None:
    """fsync a directory so that a rename in it survives a crash."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_graph(faiss: Any, path: Path, matrix: Float32Array, rows: IntpArray, dimension: int,
               mapped: bool, follow: bool = False) -> Any | None:
    """The saved graph if it is readable and holds exactly `rows` of this matrix; else None.

    `follow`: a reader of another process's files, for which a mismatch is usually a graph
    saved after its view of the matrix (tried again later): logged at debug level only.
    """
    report = logger.debug if follow else logger.warning
    flags = faiss.IO_FLAG_MMAP_IFC if mapped else 0
    try:
        index = faiss.read_index(str(path), flags)
    except RuntimeError as exc:  # faiss reports unreadable files as RuntimeError
        report("approximate dense index %s unreadable (%s); rebuilding", path, exc)
        return None
    problem = _mismatch(faiss, index, matrix, rows, dimension)
    if problem is not None:
        report("approximate dense index %s %s; rebuilding", path, problem)
        return None
    return index


def _mismatch(faiss: Any, index: Any, matrix: Float32Array, rows: IntpArray,
              dimension: int) -> str | None:
    if int(index.d) != dimension:
        return f"has dimension {index.d}, not {dimension}"
    if not hasattr(index, "id_map"):
        return "is not an id-mapped graph"
    ids = faiss.vector_to_array(index.id_map)
    if ids.size != rows.size or not np.array_equal(ids, rows):
        return f"holds {ids.size} rows, not the {rows.size} rows of its kb it is named for"
    if ids.size == 0:
        return None
    # A spread of stored vectors against the matrix: a graph of other vectors fails here.
    probe = np.unique(np.linspace(0, ids.size - 1, _VERIFY_ROWS).astype(np.int64))
    inner = faiss.downcast_index(index.index)
    stored = np.stack([inner.reconstruct(int(i)) for i in probe]).astype(np.float32)
    original = np.asarray(matrix[ids[probe]], dtype=np.float32)
    cosine = np.sum(stored * original, axis=1) / np.maximum(
        np.linalg.norm(stored, axis=1) * np.linalg.norm(original, axis=1), 1e-12)
    if float(cosine.min()) < _VERIFY_MIN_COSINE:
        return "does not match the matrix it claims to index"
    return None
