"""Cold start of the `ragsift` command, old against new: --help, kb list, searches, ingest, serve.

`old` is the code of a git commit (default 872d442, before the cached query vocabulary, the
remembered weights digest and the mapped USE weights) in a worktree (default
/tmp/ragsift-cold-old, created if absent and removed at the end unless --keep-old); `new` is
this working tree. Both run with this Python (the same virtual environment) and PYTHONPATH
pointing at their own src/, as `ragsift.cli.run()` (`main()` before it) does what the `ragsift`
script does. Each has its own data directory holding two KBs ingested by its own code first:
`mixed` (a Chinese and an English sample: its searches also run the second dense channel,
USE, when the `use` extra is installed) and `zh` (the Chinese sample alone: e5 only). Both
share the model cache (~/.cache/ragsift/models), where the e5 graph is built once beforehand.

Measured per run in fresh processes, old and new interleaved (the order alternates from run to
run, so a change of machine load hits both), medians over --runs:

- CPU seconds (user + system of the child, from wait4's rusage), its max RSS (MB) and its
  wall seconds of
  `ragsift --help`, `ragsift kb list`, `ragsift search QUERY --kb zh`, `... --kb mixed`, and
  a one-file ingest (a new ~2 KB text made of sample sentences, unique per run, into a new
  KB, so its chunks miss the embedding cache);
- with --serve, `ragsift serve --no-auth`: wall seconds until GET /healthz answers 200 and
  the CPU seconds the server had used by then (from /proc);
- with --remote, each configuration's own `ragsift serve --no-auth` runs on its data directory
  throughout, and `ragsift search QUERY --kb zh --server URL` (the client process: its CPU,
  RSS and wall, the server's work not counted) and `python -c "import ragsift.client"` (what
  an SDK user's script pays first) are timed too; the one-file ingest is left out (the
  server holds the data directory, where only one process may write).

Both source trees are byte-compiled first (`compileall`), as an installed wheel is: this
machine's environment sets PYTHONDONTWRITEBYTECODE=1, under which a fresh worktree never
gets its .pyc files and every run compiled ragsift's ~170 modules from source (~0.3-0.5
CPU-s of a search; measured 2026-12-06). One warm-up of each command per configuration runs
first (page cache, the model cache's files). The load average is read before and after; the
machine is shared, so the old / new ratios of one run matter more than the absolute figures.

Usage: python benchmarks/cold_start.py [--runs 3] [--old-commit 872d442]
       [--old-dir /tmp/ragsift-cold-old] [--keep-old] [--serve] [--remote] [--output FILE.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench_server import free_port, healthy, process_tree_cpu, stop_server, wait_ready

ROOT = Path(__file__).resolve().parents[1]
ZH, EN = "hr-handbook-zh.md", "release-notes-en.txt"
QUERY = "年假有几天"
# the console script's entry (run since 2026-12-07; main before)
CLI = "import ragsift.cli as c; getattr(c, 'run', c.main)()"
TARGETS = {"--help": "<= 0.3 CPU-s", "search --kb zh": "<= 1.0 CPU-s, <= 250 MB",
           "search --kb mixed": "<= 1.0 CPU-s, <= 250 MB"}


@dataclass
class Config:
    name: str
    src: Path
    data_dir: Path
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    walls: dict[str, list[float]] = field(default_factory=dict)
    last_wall: float = 0.0  # wall seconds of the latest child_run
    server: str | None = None  # the URL of the configuration's own server (--remote)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIFT_")}
        return {**env, "PYTHONPATH": str(self.src), "RAGSIFT_DATA_DIR": str(self.data_dir)}

    def record(self, measure: str, cpu: float, second: float) -> None:
        self.samples.setdefault(measure, []).append((cpu, second))
        self.walls.setdefault(measure, []).append(self.last_wall)

    def median_wall(self, measure: str) -> float:
        return statistics.median(self.walls[measure])

    def median(self, measure: str) -> tuple[float, float]:
        rows = self.samples[measure]
        return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)


def child_run(config: Config, argv: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, max RSS in MB, stdout) of one fresh child process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen([sys.executable, *argv], env=config.env(), stdout=stdout,
                                 stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)
        config.last_wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        text = stdout.read().decode()
        if child.returncode != 0:
            raise RuntimeError(f"{config.name}: {argv[:4]} exited {child.returncode}:\n"
                               f"{stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def cli(config: Config, *args: str) -> tuple[float, float, str]:
    return child_run(config, ["-c", CLI, *args])


def measure_help(config: Config) -> None:
    cpu, rss, _ = cli(config, "--help")
    config.record("--help", cpu, rss)


def measure_kb_list(config: Config) -> None:
    cpu, rss, out = cli(config, "kb", "list")
    if "mixed" not in out:
        raise RuntimeError(f"{config.name}: kb list lacks the KB:\n{out}")
    config.record("kb list", cpu, rss)


def _search(kb: str, remote: bool = False) -> Callable[[Config], None]:
    """`search QUERY --kb KB` of the data directory, or through the configuration's server."""
    def measure(config: Config) -> None:
        through = ["--server", config.server] if remote and config.server else []
        if remote and not through:
            raise RuntimeError(f"{config.name}: no server to search through")
        cpu, rss, out = cli(config, "search", QUERY, "--kb", kb, *through)
        if ZH not in out:
            raise RuntimeError(f"{config.name}: the search found nothing:\n{out}")
        config.record(f"search --kb {kb}" + (" --server URL" if remote else ""), cpu, rss)

    return measure


def measure_client_import(config: Config) -> None:
    cpu, rss, _ = child_run(config, ["-c", "import ragsift.client"])
    config.record("import ragsift.client", cpu, rss)


def start_server(config: Config) -> subprocess.Popen[bytes]:
    """The configuration's own `ragsift serve` on its data directory, healthy."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", "--no-auth", "--port", str(port)],
        env=config.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_ready(server, config.name, lambda: healthy(f"http://127.0.0.1:{port}/healthz"),
               poll_s=0.02)
    config.server = f"http://127.0.0.1:{port}"
    return server


def _new_text(seed: int) -> str:
    """~2 KB of sample sentences in a seeded order: a document no earlier run embedded."""
    sentences = [line.strip() for name in (ZH, EN)
                 for line in (ROOT / "samples" / name).read_text(encoding="utf-8").splitlines()
                 if len(line.strip()) > 20]
    rng = random.Random(seed)
    rng.shuffle(sentences)
    text, size = [f"# note {seed}"], 0
    for sentence in sentences:
        text.append(sentence)
        size += len(sentence.encode())
        if size > 2000:
            break
    return "\n\n".join(text) + "\n"


_INGESTS = iter(range(10**6))


def measure_ingest(config: Config) -> None:
    run = next(_INGESTS)
    path = config.data_dir.parent / f"{config.name}-note-{run}.md"
    path.write_text(_new_text(run), encoding="utf-8")
    cpu, rss, _ = cli(config, "ingest", str(path), "--kb", f"ingest{run}")
    config.record("ingest one file", cpu, rss)


def measure_serve(config: Config) -> None:
    """(CPU-s, wall s) until /healthz: the second column is wall seconds here, not RSS."""
    start = time.perf_counter()
    server = start_server(config)
    wall = time.perf_counter() - start
    try:
        config.record("serve until /healthz", process_tree_cpu(server.pid), wall)
    finally:
        stop_server(server)
        config.server = None


def prepare(config: Config, measures: list[Callable[[Config], None]]) -> None:
    """The two KBs, ingested with the configuration's own code, then one warm-up of each."""
    samples = ROOT / "samples"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(config.src)], check=True,
                   capture_output=True)
    cli(config, "ingest", str(samples / ZH), str(samples / EN), "--kb", "mixed")
    cli(config, "ingest", str(samples / ZH), "--kb", "zh")
    _, _, out = child_run(config, ["-c", "import ragsift; print(ragsift.__file__)"])
    if not out.strip().startswith(str(config.src)):
        raise RuntimeError(f"{config.name}: ragsift is imported from {out.strip()}, not "
                           f"{config.src}")
    warm_up(config, measures)


def warm_up(config: Config, measures: list[Callable[[Config], None]]) -> None:
    """One untimed run of each measure (page cache, model cache; a server's first search
    loads its models)."""
    for measure in measures:
        measure(config)
    config.samples.clear()
    config.walls.clear()


MEASURES: list[Callable[[Config], None]] = [
    measure_help, measure_kb_list, _search("zh"), _search("mixed"), measure_ingest,
]


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


def report(old: Config, new: Config, runs: int, load: tuple[float, float], commit: str) -> str:
    lines = [
        f"# Cold start: old ({commit}) vs new (working tree)", "",
        f"date {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; machine: "
        f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}; "
        f"Python {platform.python_version()}; load average {load[0]:.2f} before, "
        f"{load[1]:.2f} after",
        f"{runs} runs in fresh processes, old and new interleaved; medians; CPU-s = user + "
        "system of the process; RSS = its max resident set; ratio = old / new (above 1: new "
        "is cheaper)", "",
        "| command | old CPU-s | new CPU-s | CPU ratio | old max RSS MB | new max RSS MB "
        "| old wall s | new wall s | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for measure in old.samples:
        (old_cpu, old_second), (new_cpu, new_second) = old.median(measure), new.median(measure)
        serve = measure.startswith("serve")
        # serve's second column is its wall time until /healthz already
        second = (f"- | - | {old_second:.2f} | {new_second:.2f}" if serve else
                  f"{old_second:.0f} | {new_second:.0f} | {old.median_wall(measure):.2f} | "
                  f"{new.median_wall(measure):.2f}")
        lines.append(f"| `{measure}` | {old_cpu:.2f} | {new_cpu:.2f} | "
                     f"{old_cpu / new_cpu:.2f}x | {second} | {TARGETS.get(measure, '')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--old-commit", default="872d442")
    parser.add_argument("--old-dir", type=Path, default=Path("/tmp/ragsift-cold-old"))
    parser.add_argument("--keep-old", action="store_true", help="leave the worktree in place")
    parser.add_argument("--serve", action="store_true", help="also time serve until /healthz")
    parser.add_argument("--remote", action="store_true",
                        help="also time a search through a running server, and the client's "
                             "import")
    parser.add_argument("--output", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    if args.serve and args.remote:  # a second server cannot open a data directory one holds
        parser.error("--serve and --remote are separate runs")
    measures = MEASURES + ([measure_serve] if args.serve else [])
    remote = [_search("zh", remote=True), measure_client_import] if args.remote else []
    servers: list[subprocess.Popen[bytes]] = []
    created = old_worktree(args.old_dir, args.old_commit)
    try:
        with tempfile.TemporaryDirectory(prefix="cold_start_") as tmp:
            configs = [Config("old", args.old_dir / "src", Path(tmp) / "old" / "data"),
                       Config("new", ROOT / "src", Path(tmp) / "new" / "data")]
            for config in configs:
                config.data_dir.parent.mkdir(parents=True)
                prepare(config, measures)
                if remote:
                    servers.append(start_server(config))
                    warm_up(config, remote)
            if remote:  # the server holds the data directory: no other process may write
                measures = [m for m in measures if m is not measure_ingest] + remote
            load_before = os.getloadavg()[0]
            for run in range(args.runs):
                for measure in measures:
                    for config in configs if run % 2 == 0 else configs[::-1]:
                        measure(config)
            load_after = os.getloadavg()[0]
    finally:
        for server in servers:
            stop_server(server)
        if created and not args.keep_old:
            subprocess.run(["git", "worktree", "remove", "--force", str(args.old_dir)],
                           cwd=ROOT, check=True, capture_output=True)
    text = report(configs[0], configs[1], args.runs, (load_before, load_after), args.old_commit)
    print(text)
    if args.output is not None:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
