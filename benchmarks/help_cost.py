"""CPU cost of the `ragsift` help, old against new: the app's, a group's, a command's.

`old` is the package of a git commit (default fa73a51, before the `cli/` package and its lazy
commands), extracted with `git archive` into a temporary directory; `new` is this working tree.
Both run with this Python and PYTHONPATH pointing at their own src/, as `python -m ragsift`.
Per run, in fresh processes, old and new interleaved (the order alternating), medians over
--runs of the child's CPU seconds (user + system, wait4's rusage) and its max RSS.

Usage: python benchmarks/help_cost.py [--runs 7] [--old-commit fa73a51]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELPS = (["--help"], ["kb", "--help"], ["kb", "version", "--help"], ["faq", "--help"],
         ["search", "--help"])


def _extract(commit: str, into: Path) -> Path:
    """The src/ folder of `commit`, written under `into`."""
    archive = into / "old.tar"
    with archive.open("wb") as sink:
        subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"], stdout=sink,
                       check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _run(src: Path, args: list[str]) -> tuple[float, float]:
    """CPU seconds and max RSS (MB) of one `python -m ragsift ARGS`."""
    env = dict(os.environ, PYTHONPATH=str(src), COLUMNS="100")
    process = subprocess.Popen([sys.executable, "-m", "ragsift", *args], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{src}: ragsift {' '.join(args)} failed")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--old-commit", default="fa73a51")
    options = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"old": _extract(options.old_commit, Path(tmp)), "new": ROOT / "src"}
        for src in trees.values():  # warm-up: page cache and .pyc files
            for args in HELPS:
                _run(src, args)
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for run in range(options.runs):
            for args in HELPS:
                order = list(trees) if run % 2 == 0 else list(reversed(trees))
                for name in order:
                    samples.setdefault((name, " ".join(args)), []).append(
                        _run(trees[name], args))
    load_after = os.getloadavg()
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs "
          f"({_cpu_model()}), Python {platform.python_version()}, load "
          f"{load_before[0]:.1f} before / {load_after[0]:.1f} after, "
          f"old {options.old_commit}, {options.runs} runs, medians\n")
    print("| command | old CPU-s | new CPU-s | new / old | old RSS MB | new RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for args in HELPS:
        key = " ".join(args)
        old, new = samples[("old", key)], samples[("new", key)]
        old_cpu = statistics.median(s[0] for s in old)
        new_cpu = statistics.median(s[0] for s in new)
        print(f"| `ragsift {key}` | {old_cpu:.3f} | {new_cpu:.3f} | {new_cpu / old_cpu:.2f} | "
              f"{statistics.median(s[1] for s in old):.0f} | "
              f"{statistics.median(s[1] for s in new):.0f} |")


if __name__ == "__main__":
    main()
