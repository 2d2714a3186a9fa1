"""OpenBLAS's thread count at the start of a process of ours (the `ragsift` command).

Loaded with a thread per core, OpenBLAS's workers spin ~0.1 s each at load, though the thread
budget (adapters/thread_budget.py) keeps the count at 1 but for a lone big scan: a CLI search
cost 1.13 CPU-s against 1.00 started with one thread (docs/benchmarks.md). Started with one,
the budget still raises the count for such a scan (OpenBLAS starts the threads then). Here,
not in adapters, because the command's entry calls it before anything loads numpy.
"""

from __future__ import annotations

from collections.abc import MutableMapping

# what OpenBLAS reads for its thread count at load, in its order: a user's value is theirs
BLAS_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def start_blas_with_one_thread(environ: MutableMapping[str, str]) -> bool:
    """Set OpenBLAS's starting count to 1 in `environ` before numpy loads; True when set.
    Left alone where the user set a count, or RAGSIFT_BLAS_THREADS=off (the libraries' own
    counts)."""
    if any(name in environ for name in BLAS_COUNT_VARIABLES):
        return False
    if environ.get("RAGSIFT_BLAS_THREADS", "").strip().lower() == "off":
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True
