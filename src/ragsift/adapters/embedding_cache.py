"""Embedding caches: passages on disk by (model id, text hash), queries in a bounded LRU."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from ragsift.ports import Embedder, Vectors, passage_batches

logger = logging.getLogger(__name__)

_LOOKUP_BATCH = 500  # stays under SQLite's bound-variable limit
RESERVE_BYTES = 64 * 1024 * 1024  # free disk the cache never takes (see _room_for)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Wraps an Embedder so re-indexing and evaluation reruns never pay twice.

    Misses are embedded in one call and written at once, so an interrupted run resumes
    from everything embedded before the interruption.
    """

    def __init__(self, inner: Embedder, path: Path, query_cache_size: int = 1024) -> None:
        if query_cache_size < 0:
            raise ValueError("query_cache_size must be >= 0")
        self._inner = inner
        self._path = path
        self._full_warned = False
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS passage_embeddings ("
            " model_id TEXT NOT NULL, sha256 TEXT NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (model_id, sha256))"
        )
        self._db_lock = threading.Lock()
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._query_lock = threading.Lock()
        self._pending: dict[str, Future[Vectors]] = {}  # queries being embedded now
        self.hits = 0
        self.misses = 0

    def needs_build(self) -> bool:
        """Whether the inner model builds files on its first load (ONNX e5's graph)."""
        needs = getattr(self._inner, "needs_build", None)
        return bool(needs()) if needs is not None else False

    def prepare(self) -> bool:
        """Load the inner model now (building what it needs); whether anything was built."""
        prepare = getattr(self._inner, "prepare", None)
        return bool(prepare()) if prepare is not None else False

    @property
    def inner(self) -> Embedder:
        """The embedder this cache wraps (readiness asks a remote one whether it is up)."""
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        digests = [_digest(text) for text in texts]
        found = self._lookup(sorted(set(digests)))
        missing = [i for i, digest in enumerate(digests) if digest not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            first: dict[str, int] = {}  # a text repeated within one call is embedded once
            for i in missing:
                first.setdefault(digests[i], i)
            fresh = self._inner.embed_passages([texts[i] for i in first.values()])
            rows = {digest: fresh[j] for j, digest in enumerate(first)}
            self._store(rows)
            found.update(rows)
        if not texts:
            return np.zeros((0, self._inner.dimension), dtype=np.float32)
        return np.stack([found[digest] for digest in digests]).astype(np.float32, copy=False)

    def embed_passage_batches(
        self, batches: Sequence[Sequence[str]]
    ) -> Iterator[Vectors | Exception]:
        """embed_passages per batch, the misses of all handed to the inner embedder at once
        (concurrently, if it can); a failed batch fails its own texts and the later batches
        repeating one of them, no other. Each batch's misses are stored as they come."""
        digests = [[_digest(text) for text in batch] for batch in batches]
        found = self._lookup(sorted({d for batch in digests for d in batch}))
        owner: dict[str, int] = {}  # a missing text is embedded by the first batch holding it
        todo: list[list[str]] = [[] for _ in batches]
        for i, batch in enumerate(batches):
            for text, digest in zip(batch, digests[i], strict=True):
                if digest not in found and digest not in owner:
                    owner[digest] = i
                    todo[i].append(text)
        missing = sum(1 for batch in digests for d in batch if d not in found)
        self.hits += sum(len(batch) for batch in batches) - missing
        self.misses += missing
        fresh = passage_batches(self._inner, [texts for texts in todo if texts])
        failed: dict[int, Exception] = {}
        for i, batch in enumerate(digests):
            if todo[i]:
                result = next(fresh)
                if isinstance(result, Exception):
                    failed[i] = result
                else:
                    rows = {_digest(text): row for text, row in zip(todo[i], result, strict=True)}
                    self._store(rows)
                    found.update(rows)
            failure = next((failed[owner[d]] for d in batch if d not in found), None)
            if failure is not None:
                yield failure
            elif not batch:
                yield np.zeros((0, self._inner.dimension), dtype=np.float32)
            else:
                yield np.stack([found[d] for d in batch]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> Vectors:
        """The query's vector; a call meeting one in flight for the same text waits for
        its vector instead of embedding it again: a search over several KBs runs each KB's
        dense channel in its own thread, at the same moment, with the same query."""
        with self._query_lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
            pending = self._pending.get(text)
            owner = pending is None
            if pending is None:
                pending = self._pending[text] = Future()
        if not owner:
            return pending.result()  # the owner's vector, or its exception raised here too
        try:
            vector = self._inner.embed_query(text)
        except BaseException as exc:
            with self._query_lock:
                del self._pending[text]
            pending.set_exception(exc)
            raise
        with self._query_lock:
            del self._pending[text]
            if self._query_cache_size:
                self._queries[text] = vector
                while len(self._queries) > self._query_cache_size:
                    self._queries.popitem(last=False)
        pending.set_result(vector)
        return vector

    def _lookup(self, digests: Sequence[str]) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        model = self._inner.model_id
        with self._db_lock:
            for start in range(0, len(digests), _LOOKUP_BATCH):
                batch = digests[start : start + _LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    "SELECT sha256, vector FROM passage_embeddings"
                    f" WHERE model_id = ? AND sha256 IN ({marks})",
                    [model, *batch],
                )
                for digest, blob in rows:
                    found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _store(self, rows: dict[str, Vectors]) -> None:
        model = self._inner.model_id
        payload = [
            (model, digest, np.asarray(vector, dtype=np.float32).tobytes())
            for digest, vector in rows.items()
        ]
        if not self._room_for(sum(len(blob) for _, _, blob in payload)):
            return
        with self._db_lock:
            try:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR REPLACE INTO passage_embeddings VALUES (?, ?, ?)", payload
                )
                self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                # a cache that cannot grow (a full disk) must not fail the document it
                # serves: the vectors are at hand, only a later re-embedding is not saved
                logger.warning("embedding cache not updated (%s)", exc)
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")

    def _room_for(self, size: int) -> bool:
        """Whether the cache may grow by about `size` bytes: it leaves the last RESERVE_BYTES
        of its disk to the facts and the index (a cache that took them would fail the very
        documents it serves, and then their FAILED status: seen on a nearly full disk)."""
        try:
            free = shutil.disk_usage(self._path.parent).free
        except OSError:
            return True  # unknown: SQLite itself will say when it is full
        if free - 2 * size >= RESERVE_BYTES:  # twice: the WAL, then the checkpoint
            self._full_warned = False
            return True
        if not self._full_warned:
            logger.warning("embedding cache not updated: %d bytes free on its disk, under "
                           "the %d kept for the facts and the index", free, RESERVE_BYTES)
            self._full_warned = True
        return False

    def close(self) -> None:
        with self._db_lock:
            self._db.close()
