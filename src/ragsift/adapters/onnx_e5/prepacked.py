"""The e5 graph saved as ONNX Runtime leaves it after optimizing it, with the weights its
kernels pre-pack, so a session opens without optimizing or packing (issue 39 item 1).

Opening the cached graph, ONNX Runtime fuses it and re-lays each MatMul's weights for this
CPU's kernels; that packing is most of the 0.14-0.19 CPU-s a session took to open, a sixth of
a CLI search (2026-12-07). ONNX Runtime can save the optimized graph with the packed weights
(`session.save_external_prepacked_constant_initializers`); opened with optimizations off, it
opens in 0.07-0.11 CPU-s and its outputs are bit-identical (docs/benchmarks.md).

Packed weights belong to one CPU's kernels and one ONNX Runtime version, so the files are
named by both (machine_key). Three files, `<stem>.onnx`, `<stem>.onnx.data` (the optimized
weights and their packed copy, ~170 MB for e5-small) and `<stem>.probe` last: the output the
graph it was built from gives for a fixed input. Every open runs that input and compares the
output bit for bit; a difference (other kernels under the same name, a damaged file) or any
failure sends the process back to the plain graph, which always stays beside, and removes the
probe so that the load packs the graph again. A build runs the same check before it renames
anything into place (a machine where they differ is marked and left unpacked), and writes in
a temporary folder renamed file by file, the probe last: a build killed midway leaves no
probe, so nothing is opened.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.adapters import atomic_files
from ragsift.adapters.onnx_e5.cache import write_atomically

logger = logging.getLogger(__name__)

# OpenSession(path, optimize, optimized_to): a session on the graph at `path`; `optimize`
# False opens it with graph optimizations off; `optimized_to` saves the optimized graph there
# with its packed weights (in `<optimized_to>.data`).
OpenSession = Callable[[str, bool, "str | None"], Any]

_PROBE_TOKENS = 8
_PROBE_SEED = 20261207


def machine_key() -> str:
    """What packed weights depend on: ONNX Runtime's version and this CPU (its model and
    instruction-set flags as the kernel selection reads them), as 16 hex digits."""
    import onnxruntime

    parts = [onnxruntime.__version__, platform.machine(), _cpu_signature()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _cpu_signature() -> str:
    """The first processor's model and feature lines of /proc/cpuinfo, else platform's."""
    wanted = ("model name", "flags", "features", "cpu implementer", "cpu part")
    found: dict[str, str] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError), \
            open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                break  # the first processor's block ends here
            name, _, value = line.partition(":")
            key = name.strip().lower()
            if key in wanted:
                found[key] = value.strip()
    if found:
        return ";".join(f"{key}={found[key]}" for key in sorted(found))
    return platform.processor() or "unknown"


def packed_path(graph: Path, key: str) -> Path:
    """The packed graph built from `graph` for machine `key`."""
    return graph.with_name(f"{graph.stem}-packed-{key}.onnx")


def probe_path(packed: Path) -> Path:
    return packed.with_name(packed.stem + ".probe")


def refused_path(packed: Path) -> Path:
    """Marks a machine whose packed graph gave other outputs: not built again."""
    return packed.with_name(packed.stem + ".refused")


def needs_packing(graph: Path, key: str) -> bool:
    """Whether no packed graph of `graph` was saved (or refused) for machine `key`."""
    packed = packed_path(graph, key)
    return not (probe_path(packed).is_file() or refused_path(packed).is_file())


def probe_inputs(hidden: int) -> dict[str, np.ndarray]:
    """The fixed input every open runs: a few token vectors of an embedding's scale."""
    rng = np.random.default_rng(_PROBE_SEED)
    embeddings = rng.standard_normal((1, _PROBE_TOKENS, hidden)).astype(np.float32) * 0.5
    return {"embeddings": embeddings, "mask": np.ones((1, _PROBE_TOKENS), dtype=np.float32)}


def _probe_output(session: Any, hidden: int) -> bytes:
    (means,) = session.run(["mean"], probe_inputs(hidden))
    return np.ascontiguousarray(means, dtype=np.float32).tobytes()


def open_packed(graph: Path, key: str, hidden: int, open_session: OpenSession) -> Any | None:
    """A session on the packed graph of `graph` for this machine when it is complete and
    gives the plain graph's probe output bit for bit; None otherwise (the caller opens the
    plain graph)."""
    packed = packed_path(graph, key)
    probe = probe_path(packed)
    try:
        expected = base64.b64decode(probe.read_bytes(), validate=True)
    except (OSError, ValueError):
        return None  # not built here (or a build was killed before its last file)
    try:
        session = open_session(str(packed), False, None)
        same = _probe_output(session, hidden) == expected
    except Exception as exc:  # onnxruntime raises its own types for damaged files
        logger.warning("the packed e5 graph %s does not load (%s): using %s, and packing "
                       "it again", packed, exc, graph.name)
        _forget(probe)
        return None
    if not same:
        logger.warning("the packed e5 graph %s gives other outputs than %s on this machine: "
                       "using the plain graph, and packing it again", packed, graph.name)
        _forget(probe)
        return None
    return session


def _forget(probe: Path) -> None:
    """Without its probe a packed graph is built again by the next load (a build that
    differs too is refused for good)."""
    with contextlib.suppress(OSError):
        probe.unlink()


def build_packed(graph: Path, key: str, hidden: int, open_session: OpenSession) -> bool:
    """Save the packed graph of `graph` for machine `key` beside it; whether it was saved.

    Nothing is saved when the packed graph's probe output differs from the plain graph's.
    Failures to write are logged, never raised: the plain graph serves as before.
    """
    packed = packed_path(graph, key)
    for written in (packed, probe_path(packed)):  # what builds killed midway left
        atomic_files.remove_stale_temporaries(graph.parent, written.name + ".*.tmp",
                                              atomic_files.STALE_TEMPORARY_S)
    try:
        with atomic_files.staging_folder(packed) as temp:
            return _build_in(temp, graph, packed, hidden, open_session)
    except Exception as exc:  # onnxruntime raises its own types; the plain graph serves
        logger.warning("cannot save the packed e5 graph %s (%s)", packed, exc)
        return False


def _build_in(temp: Path, graph: Path, packed: Path, hidden: int,
              open_session: OpenSession) -> bool:
    staged = temp / packed.name
    expected = _probe_output(open_session(str(graph), True, str(staged)), hidden)
    if _probe_output(open_session(str(staged), False, None), hidden) != expected:
        logger.info("the packed e5 graph gives other outputs than %s on this machine: "
                    "sessions keep optimizing and packing at open", graph.name)
        refused_path(packed).touch()
        return False
    data = staged.with_name(staged.name + ".data")
    atomic_files.replace_in_order([(data, packed.with_name(packed.name + ".data")),
                                   (staged, packed)])
    write_atomically(probe_path(packed), base64.b64encode(expected))
    logger.info("saved the e5 graph optimized and packed for this machine as %s", packed)
    return True
