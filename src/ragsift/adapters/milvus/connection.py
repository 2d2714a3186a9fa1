"""Opening pymilvus clients: a Milvus server by URL, or a milvus-lite data file by path.

pymilvus starts one in-process milvus-lite server per `.db` path and keeps it until the
process exits. The chunk and FAQ indexes of one deployment share that file, so the server
is released (its files closed and unlocked) only when the last index using it closes;
a reopen then really reads the data back from disk.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.domain.errors import RagsiftError

logger = logging.getLogger(__name__)

_lite_lock = threading.Lock()
_lite_users: dict[str, int] = {}


class MilvusIndexInUse(RagsiftError):
    """The milvus-lite data file is held by another process (one process per file)."""

    code = "index_in_use"


class MilvusUnavailable(RagsiftError):
    """The Milvus server cannot be reached or refused the connection."""

    code = "index_unavailable"


def is_lite_uri(uri: str) -> bool:
    """A milvus-lite data file: a local path ending in `.db`."""
    return uri.endswith(".db") and "://" not in uri


@dataclass
class Connection:
    """An open client and, for milvus-lite, the data file it holds a share of."""

    client: Any
    lite_path: str | None

    def close(self) -> None:
        """Close the client; the last user of a milvus-lite file also stops its server."""
        try:
            self.client.close()
        finally:
            if self.lite_path is not None:
                _release_lite(self.lite_path)
                self.lite_path = None


def connect(uri: str, token: str | None = None, timeout_s: float = 30.0) -> Connection:
    """A MilvusClient for `uri` (`http(s)://host:19530[/db_name]` or `path/to/file.db`)."""
    try:
        from pymilvus import MilvusClient
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RagsiftError(
            "RAGSIFT_INDEX_URI names Milvus, but pymilvus is not installed: "
            "pip install 'ragsift[milvus]'"
        ) from exc
    _import_scipy_sparse()
    if not is_lite_uri(uri):
        try:
            client = MilvusClient(uri=uri, token=token or "", timeout=timeout_s)
        except Exception as exc:
            raise MilvusUnavailable(f"cannot connect to Milvus at {uri}: {exc}") from exc
        return Connection(client, None)
    path = str(Path(uri).expanduser().resolve())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with _lite_lock:
        try:
            client = MilvusClient(uri=path)
        except Exception as exc:
            if _lite_users.get(path, 0) == 0:
                _stop_lite_server(path)
            raise MilvusIndexInUse(
                f"cannot open the milvus-lite data file {path}: {exc}. milvus-lite allows one "
                "process per data file (is another ragsift process using it?); for several "
                "processes run a Milvus server and set RAGSIFT_INDEX_URI=http://host:19530"
            ) from exc
        _lite_users[path] = _lite_users.get(path, 0) + 1
    return Connection(client, path)


def _release_lite(path: str) -> None:
    with _lite_lock:
        users = _lite_users.get(path, 0) - 1
        if users > 0:
            _lite_users[path] = users
            return
        _lite_users.pop(path, None)
        _stop_lite_server(path)


def _stop_lite_server(path: str) -> None:
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:  # pragma: no cover - a lite path cannot open without it
        return
    server_manager_instance.release_server(path)
    logger.debug("released milvus-lite server for %s", path)


def _import_scipy_sparse() -> None:
    """pymilvus imports scipy.sparse on first use from whichever thread searches; two channel
    threads doing it at once saw a partially initialised module (AttributeError in
    scipy.sparse._bsr), so it is imported once here, before any search thread runs."""
    with contextlib.suppress(ImportError):
        importlib.import_module("scipy.sparse")
