"""Which SIMD kernels faiss runs (its dynamic-dispatch build picks the CPU's highest level).

faiss-cpu 1.15's wheels choose at import among AVX2, AVX512, AVX512_VPOPCNT (Zen 4, Ice
Lake) and AVX512_SPR (Sapphire Rapids and newer). On a CPU where faiss picked AVX512_SPR, its
kernels for the graphs' 8-bit scalar quantiser were slower than its plain AVX512 ones: a
300k-row HNSW-SQ8 build 1.3x slower (8,386-8,616 against 10,752-11,027 rows/s), its searches
1.3x, a 1M-row store's build 4,725 against 7,156 chunks/s; so `auto` steps down from
AVX512_SPR to AVX512 and leaves every other choice to faiss (AVX512_VPOPCNT built a 1M store
as fast as AVX512: docs/benchmarks.md, 2026-12-04 afternoon, which also says which of these
figures were recorded). The level is process-wide: the last store opened with another wish
sets it.

`import_faiss` is the one way the store imports faiss: it first asks OpenMP (faiss's bundled
libgomp, which reads the variable when it loads) to put idle threads to sleep rather than
spin, unless the user chose otherwise. A graph build runs OpenMP teams beside the ingest's
own work (analysis, BM25), and spinning team threads took CPU from it: a 100k-chunk build
cost 138-139 CPU-s (79-80 s) with libgomp's default spin and 119-120 CPU-s (71-73 s) passive
(docs/benchmarks.md, 2026-12-06). Searches run one OpenMP thread per call: unchanged.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

logger = logging.getLogger(__name__)

AUTO = "auto"
LIBRARY = "library"  # keep what faiss picked
_STEP_DOWN = {"AVX512_SPR": "AVX512"}


def import_faiss() -> Any:
    """The faiss module (ImportError when the `ann` extra is absent), OpenMP's idle threads
    passive unless OMP_WAIT_POLICY is set."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return importlib.import_module("faiss")


def apply_simd_level(faiss: Any, wanted: str) -> str | None:
    """Set faiss's SIMD level for `wanted`; the level in effect (None: faiss cannot say).

    Idempotent: `auto` on a level already stepped down, or a level already set, changes
    nothing.
    """
    config = getattr(faiss, "SIMDConfig", None)
    if config is None:  # a build without dynamic dispatch: nothing to choose
        return None
    current = str(config.get_level_name())
    target = _target(current, wanted)
    if target is None or target == current:
        return current
    level = getattr(faiss, f"SIMDLevel_{target}", None)
    try:
        if level is None:
            raise ValueError(f"this faiss build has no level {target}")
        config.set_level(level)
    except Exception as exc:  # faiss raises its own exception type for a level the CPU lacks
        logger.warning("faiss SIMD level %s not available (%s): keeping %s",
                       target, exc, current)
        return current
    logger.info("faiss SIMD level %s (faiss picked %s)", target, current)
    return target


def _target(current: str, wanted: str) -> str | None:
    if wanted == LIBRARY:
        return None
    if wanted == AUTO:
        return _STEP_DOWN.get(current)
    return wanted
