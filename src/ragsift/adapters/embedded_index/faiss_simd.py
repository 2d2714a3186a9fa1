"""Which SIMD kernels faiss runs (its dynamic-dispatch build picks the CPU's highest level).

faiss-cpu 1.15's wheels choose at import among AVX2, AVX512 and AVX512_SPR (Sapphire Rapids
and newer). On such a CPU its AVX512_SPR kernels for the graphs' 8-bit scalar quantiser were
slower than its plain AVX512 ones: a 300k-row HNSW-SQ8 build 1.4x slower (8.5k against
12.2k rows/s) and a search 1.3x (docs/benchmarks.md, 2026-12-04), so `auto` steps down from
AVX512_SPR to AVX512 and leaves every other choice to faiss. The level is process-wide: the
last store opened with another wish sets it.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

AUTO = "auto"
LIBRARY = "library"  # keep what faiss picked
_STEP_DOWN = {"AVX512_SPR": "AVX512"}


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
