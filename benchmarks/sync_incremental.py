"""A folder sync after editing 1 % of its files vs a full ingest of the folder (real e5).

Writes N short bilingual Markdown files, ingests the folder with `ragsift sync` (the full
cost), edits 1 % of the files (one paragraph each), and syncs again; then a sync with no
change. Each run is a real `ragsift` process; wall time and its CPU seconds (getrusage of
the children) are reported side by side, with the passages embedded by the model (the
embedding cache is cleared before each run, so only what the plan re-embeds is counted).

Usage: python benchmarks/sync_incremental.py [--files 1000] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPICS = ["停车", "年假", "报销", "食堂", "门禁", "加班", "培训", "出差", "设备", "安全"]


def write_folder(folder: Path, files: int, rng: random.Random) -> None:
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        paragraphs = [f"# {topic} 规定 {i}"] + [
            f"第{j}条：{topic}相关事项 {i}-{j}，费用 {rng.randint(1, 99)} CNY，"
            f"rule {i}.{j} applies to team {rng.randint(1, 40)}." for j in range(3)]
        (folder / f"{i // 100:02d}" / f"doc{i:04d}.md").parent.mkdir(exist_ok=True)
        (folder / f"{i // 100:02d}" / f"doc{i:04d}.md").write_text("\n\n".join(paragraphs),
                                                                    "utf-8")


def run_sync(folder: Path, data: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its children, last stdout line)."""
    cache = data / "cache" / "embeddings.sqlite"
    if cache.exists():  # only what this run embeds counts as model work
        with sqlite3.connect(cache) as db:
            db.execute("DELETE FROM passage_embeddings")
    env = {**os.environ, "RAGSIFT_DATA_DIR": str(data)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragsift.cli", "sync", str(folder),
                           "--kb", "bench", "--prune"], env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the process and the preparation workers it waited for
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 0, done.stdout + done.stderr
    return wall, cpu, done.stdout.strip().splitlines()[-1]


def embedded_rows(data: Path) -> int:
    with sqlite3.connect(data / "cache" / "embeddings.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM passage_embeddings").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    rng = random.Random(7)
    root = Path(tempfile.mkdtemp(prefix="ragsift-sync-bench-"))
    try:
        folder, data = root / "docs", root / "data"
        folder.mkdir()
        write_folder(folder, args.files, rng)
        rows = []
        full = run_sync(folder, data)
        rows.append(("full ingest (sync of a new folder)", *full, embedded_rows(data)))
        edited = rng.sample(sorted(folder.rglob("*.md")), max(1, args.files // 100))
        for path in edited:
            path.write_text(path.read_text("utf-8") + "\n\n第9条：新增条款 edited.", "utf-8")
        incremental = run_sync(folder, data)
        rows.append((f"sync after editing {len(edited)} files", *incremental,
                     embedded_rows(data)))
        idle = run_sync(folder, data)
        rows.append(("sync with nothing changed", *idle, embedded_rows(data)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        f"machine: {platform.machine()} {os.cpu_count()} cores; {platform.python_version()}; "
        f"date {dt.date.today()}; load average {os.getloadavg()[0]:.2f} (start of report)",
        "",
        "| run | wall s | CPU s | passages embedded | summary |",
        "|---|---|---|---|---|",
        *(f"| {name} | {wall:.1f} | {cpu:.1f} | {embedded} | {summary} |"
          for name, wall, cpu, summary, embedded in rows),
        "",
        f"incremental / full: wall {rows[1][1] / rows[0][1]:.3f}x, CPU "
        f"{rows[1][2] / rows[0][2]:.3f}x",
    ]
    report = "\n".join(lines)
    print(report)
    if args.output:
        args.output.write_text(report + "\n", "utf-8")


if __name__ == "__main__":
    main()
