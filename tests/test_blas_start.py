"""blas_start: OpenBLAS starts with one thread in the `ragsift` command, and the thread budget
still raises it for a lone big scan."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from ragsift.blas_start import start_blas_with_one_thread


def test_openblas_starts_with_one_thread_unless_the_user_set_a_count() -> None:
    environ: dict[str, str] = {}
    assert start_blas_with_one_thread(environ)
    assert environ == {"OPENBLAS_NUM_THREADS": "1"}
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        theirs = {name: "3"}
        assert not start_blas_with_one_thread(theirs)
        assert theirs == {name: "3"}
    off = {"RAGSIFT_BLAS_THREADS": " OFF "}
    assert not start_blas_with_one_thread(off)
    assert "OPENBLAS_NUM_THREADS" not in off


def test_started_with_one_thread_a_lone_big_scan_still_gets_every_core() -> None:
    """The real OpenBLAS: started with one thread, the budget raises the count for a lone
    big scan (OpenBLAS starts the threads then) and sets one again after."""
    script = textwrap.dedent("""
        import os
        from ragsift.adapters.thread_budget import MIN_PARALLEL_WORK, BudgetMode, ThreadBudget
        from ragsift.blas_start import start_blas_with_one_thread
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
        os.environ.pop("GOTO_NUM_THREADS", None)
        os.environ.pop("OMP_NUM_THREADS", None)
        os.environ.pop("RAGSIFT_BLAS_THREADS", None)
        start_blas_with_one_thread(os.environ)
        import numpy
        from threadpoolctl import threadpool_info
        def counts():
            return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        print(counts())
        budget = ThreadBudget(BudgetMode("auto"), cores=2)
        with budget.blas_call(MIN_PARALLEL_WORK):
            during = counts()
            numpy.ones((2000, 300), dtype=numpy.float32) @ numpy.ones(300, dtype=numpy.float32)
        print(during, counts())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split("\n")[:2] == ["[1]", "[2] [1]"]


def test_the_ragsift_command_starts_openblas_with_one_thread_before_any_command() -> None:
    script = ("import os, ragsift.cli as cli; "
              "cli.main = lambda: print(os.environ.get('OPENBLAS_NUM_THREADS'), "
              "'numpy' in __import__('sys').modules); cli.run()")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS",
                        "RAGSIFT_BLAS_THREADS")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=60, env=env)
    assert done.stdout.split() == ["1", "False"]  # set before numpy (OpenBLAS) loads
