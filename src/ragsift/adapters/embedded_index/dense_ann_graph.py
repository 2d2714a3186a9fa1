"""One kb's HNSW graph of the dense store: build, extend, own, save, load.

A graph holds every row of its kb below its `covered` watermark (dead rows too: searches
exclude them by the row bitmap), keyed by row number. Rows of the kb at or past `covered`
are the tail, scanned exactly at search time, so a graph is never stale.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_ann_files import (
    TRAIN_ROWS,
    GraphParams,
    ann_path,
    graph_key,
    hnsw_of,
    new_graph,
    open_graph,
    rename_graph,
    save_graph,
)

if TYPE_CHECKING:
    from ragsift.adapters.embedded_index.dense_snapshot import Snapshot
    from ragsift.adapters.embedded_index.read_write_lock import ReadWriteLock

logger = logging.getLogger(__name__)

IntpArray = NDArray[np.intp]

# Rows added to a graph under one exclusive hold: searches wait at most this long (~20 ms).
ADD_STEP_ROWS = 256
_BUILD_STEP_ROWS = 32_768


@dataclass(slots=True)
class Graph:
    """One kb's graph and what its file on disk holds."""

    kb_id: str
    index: Any
    generation: int
    covered: int  # grows only; rows added under the write lock first
    size: int  # rows held
    mapped: bool
    path: Path | None = None  # the file saved or mapped (None: never saved)
    saved: int = 0  # the file's watermark
    saved_size: int = 0

    @property
    def key(self) -> str:
        return graph_key(self.kb_id)


def kb_rows(snap: Snapshot, kb_id: str, start: int, stop: int) -> IntpArray:
    """Row numbers of `kb_id` (live or not) in `[start, stop)`."""
    code = snap.vocab.index["kb_id"].get(kb_id)
    if code is None or stop <= start:
        return np.empty(0, dtype=np.intp)
    found = np.flatnonzero(snap.codes["kb_id"][start:stop] == code + 1)
    out: IntpArray = (found + start).astype(np.intp)
    return out


def build(faiss: Any, snap: Snapshot, kb_id: str, params: GraphParams, dimension: int,
          stop: threading.Event) -> Graph | None:
    """A new graph of every row of `kb_id` in `snap` (None: stopped meanwhile)."""
    rows = kb_rows(snap, kb_id, 0, snap.size)
    index = new_graph(faiss, dimension, params, np.asarray(snap.matrix[rows[:TRAIN_ROWS]]))
    for start in range(0, rows.size, _BUILD_STEP_ROWS):
        if stop.is_set():
            return None
        block = rows[start:start + _BUILD_STEP_ROWS]
        index.add_with_ids(np.ascontiguousarray(snap.matrix[block], dtype=np.float32),
                           block.astype(np.int64))
    logger.info("built approximate dense index of kb %r over %d rows", kb_id, rows.size)
    return Graph(kb_id, index, snap.generation, snap.size, int(rows.size), mapped=False)


def extend(graph: Graph, snap: Snapshot, lock: ReadWriteLock, stop: threading.Event) -> None:
    """Add the kb's rows in `[graph.covered, snap.size)` in short exclusive steps."""
    rows = kb_rows(snap, graph.kb_id, graph.covered, snap.size)
    for start in range(0, rows.size, ADD_STEP_ROWS):
        if stop.is_set():
            return
        block = rows[start:start + ADD_STEP_ROWS]
        vectors = np.ascontiguousarray(snap.matrix[block], dtype=np.float32)
        with lock.write():
            graph.index.add_with_ids(vectors, block.astype(np.int64))
            graph.size += int(block.size)
            graph.covered = int(block[-1]) + 1
    graph.covered = max(graph.covered, snap.size)


def own(faiss: Any, graph: Graph, snap: Snapshot, dimension: int,
        ef_construction: int) -> Graph:
    """A mapped graph is read-only (faiss aborts on adding to it): a private copy of it."""
    assert graph.path is not None
    rows = kb_rows(snap, graph.kb_id, 0, graph.saved)
    index = open_graph(faiss, graph.path, snap.matrix, rows, dimension, mapped=False)
    if index is None or int(index.ntotal) != graph.size:
        raise RuntimeError(f"{graph.path} changed while mapped")
    # a file keeps the effort it was built with; new rows get the configured one
    hnsw_of(faiss, index).efConstruction = ef_construction
    return Graph(graph.kb_id, index, graph.generation, graph.covered, graph.size,
                 mapped=False, path=graph.path, saved=graph.saved,
                 saved_size=graph.saved_size)


def save(faiss: Any, graph: Graph, directory: Path) -> None:
    """Write the graph under its current watermark, then drop the file it replaces."""
    covered, size = graph.covered, graph.size
    path = ann_path(directory, graph.generation, graph.key, covered)
    old = graph.path
    if old == path:
        return
    if old is not None and size == graph.saved_size and old.exists():
        rename_graph(old, path)  # no new rows: the same bytes are sound further
    else:
        assert not graph.mapped
        save_graph(faiss, graph.index, path)
        if old is not None and old != path:
            old.unlink(missing_ok=True)
    graph.path, graph.saved, graph.saved_size = path, covered, size


def load(faiss: Any, snap: Snapshot, kb_id: str, covered: int, path: Path, dimension: int,
         follow: bool) -> Graph | None:
    """The graph file of `kb_id` named for `covered`, mapped, if it is sound for `snap`."""
    if covered > snap.size:
        (logger.debug if follow else logger.warning)(
            "approximate dense index %s covers rows past the matrix's %d", path, snap.size)
        return None
    rows = kb_rows(snap, kb_id, 0, covered)
    index = open_graph(faiss, path, snap.matrix, rows, dimension, mapped=True, follow=follow)
    if index is None:
        return None
    size = int(index.ntotal)
    return Graph(kb_id, index, snap.generation, covered, size, mapped=True, path=path,
                 saved=covered, saved_size=size)
