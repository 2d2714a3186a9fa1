"""Office and data formats: parse rates in-process, and the text corpus's ingest, old against new.

Part 1 parses with ragsift.ingestion.parsers.parse_document (default limits) in this process:
a generated workbook (openpyxl, written to a temp dir) and samples/price-limits.xlsx, a
generated CSV, a generated deck (python-pptx: title, bullets, a 5x4 table every 5th slide,
speaker notes) and samples/onboarding-deck.pptx, and JSON / JSON Lines of generated records.
Each input is parsed once untimed (imports), then `--runs` times; the medians of wall
(time.perf_counter) and CPU (time.process_time) seconds give the rates. Rows count every
non-empty sheet row, the header row included; CSV rows stay at max_sheet_rows (100,000), so
nothing is cut.

Part 2 ingests the sample files committed at `--revision` (the text corpus: md, html, pdf,
docx, txt) with the real CLI, `ragsift ingest <copies> --kb bench`, in a child interpreter:
`old` imports ragsift from a git worktree of the revision, `new` from this tree's src (the
venv's ragsift is an editable path entry, so the sys.path entry put first wins; the script
checks where ragsift resolves). Each run gets a fresh RAGSIFT_DATA_DIR (other RAGSIFT_
variables are dropped): the embedding cache is DATA_DIR/cache/embeddings.sqlite, so nothing is
cached between runs, and the script checks the cache is there after each run. Runs alternate
old, new, new, old, ...; CPU seconds are the child's and its reaped descendants' (ingest
workers fork), from resource.getrusage(RUSAGE_CHILDREN) deltas. The chunk counts are the CLI's
per document: the new PDF parser puts headings into heading paths, so PDFs' counts differ.

Usage: python benchmarks/office_formats.py [--runs 3] [--ingest-runs 3] [--revision b99c722]
       [--worktree /tmp/ragsift-old] [--keep-worktree] [--skip-parse] [--skip-ingest]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import platform
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragsift.ingestion.parsers import ParsedDocument, parse_document  # noqa: E402

PYTHON = ROOT / ".venv" / "bin" / "python"
CLI = 'import sys; sys.path.insert(0, {src!r}); from ragsift.cli import main; main()'
WHERE = (
    "import sys; sys.path.insert(0, {src!r}); import ragsift, ragsift.cli, "
    "ragsift.ingestion.parsers.pdf as pdf; print(ragsift.__file__); print(pdf.__file__)"
)
CHUNKS = re.compile(r"^READY (\S+) -> \S+ \((\d+) chunks\)$", re.MULTILINE)
WORDS = ["policy", "budget", "approval", "travel", "laptop", "network",
         "报销", "审批", "差旅", "设备", "网络", "安全"]


@dataclass(frozen=True)
class Case:
    label: str
    filename: str
    data: bytes
    unit: str
    count: int


@dataclass(frozen=True)
class Run:
    variant: str
    load1: float
    wall_s: float
    cpu_s: float
    chunks: dict[str, int]
    cached: int


def machine() -> str:
    model = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return f"nproc {nproc}, {model}, Python {platform.python_version()}"


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def text(row: int, column: int) -> str:
    return f"{WORDS[(row + column) % len(WORDS)]} {row}-{column}"


def make_xlsx(path: Path, rows: int, columns: int) -> bytes:
    from openpyxl import Workbook  # type: ignore[import-untyped]

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("Data")
    sheet.append([f"Column {column}" for column in range(1, columns + 1)])
    for row in range(1, rows):
        sheet.append([row * 10 + column if column % 3 == 0 else text(row, column)
                      for column in range(columns)])
    workbook.save(path)
    return path.read_bytes()


def make_csv(rows: int, columns: int) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([f"column_{column}" for column in range(columns)])
    writer.writerows([text(row, column) for column in range(columns)] for row in range(1, rows))
    return out.getvalue().encode("utf-8")


def make_pptx(path: Path, slides: int) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for number in range(1, slides + 1):
        if number % 5 == 0:
            slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
            table = slide.shapes.add_table(5, 4, Inches(1), Inches(2), Inches(8), Inches(3)).table
            for row in range(5):
                for column in range(4):
                    table.cell(row, column).text = (
                        f"Header {column}" if row == 0 else text(number + row, column)
                    )
        else:
            slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
            body = slide.placeholders[1].text_frame
            body.text = f"Point one of slide {number}: {text(number, 0)}"
            for level, words in ((1, text(number, 1)), (0, text(number, 2)), (1, text(number, 3))):
                paragraph = body.add_paragraph()
                paragraph.text = f"Point about {words}"
                paragraph.level = level
        assert slide.shapes.title is not None
        slide.shapes.title.text = f"Slide {number}: {text(number, 4)}"
        notes = slide.notes_slide.notes_text_frame
        assert notes is not None
        notes.text = f"Speaker notes for slide {number}."
    deck.save(str(path))
    return path.read_bytes()


def record(number: int) -> dict[str, object]:
    return {"id": number, "title": f"Record {number}", "tags": [WORDS[number % 12], "bench"],
            "author": {"name": f"Author {number % 97}", "team": WORDS[number % 7]},
            "body": f"{text(number, 1)}; {text(number, 2)}."}


def sheet_rows(data: bytes) -> int:
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True)
    return sum(
        1 for sheet in workbook.worksheets for row in sheet.iter_rows(values_only=True)
        if any(value is not None and str(value).strip() for value in row)
    )


def slide_count(data: bytes) -> int:
    from pptx import Presentation

    return len(Presentation(io.BytesIO(data)).slides)


def cases(folder: Path, scale: float) -> list[Case]:
    xlsx_rows, csv_rows, slides = int(20_000 * scale), int(100_000 * scale), int(200 * scale)
    records = int(50_000 * scale)
    found = [
        Case("generated xlsx 8 columns", "generated.xlsx",
             make_xlsx(folder / "generated.xlsx", xlsx_rows, 8), "rows", xlsx_rows),
        Case("generated csv 8 columns", "generated.csv", make_csv(csv_rows, 8), "rows", csv_rows),
        Case("generated pptx", "generated.pptx", make_pptx(folder / "generated.pptx", slides),
             "slides", slides),
        Case("generated json array", "generated.json",
             json.dumps([record(n) for n in range(records)], ensure_ascii=False).encode(),
             "records", records),
        Case("generated jsonl", "generated.jsonl",
             "".join(json.dumps(record(n), ensure_ascii=False) + "\n"
                     for n in range(records)).encode(), "records", records),
    ]
    xlsx = (ROOT / "samples" / "price-limits.xlsx").read_bytes()
    pptx = (ROOT / "samples" / "onboarding-deck.pptx").read_bytes()
    found.insert(1, Case("samples/price-limits.xlsx", "price-limits.xlsx", xlsx, "rows",
                         sheet_rows(xlsx)))
    found.insert(4, Case("samples/onboarding-deck.pptx", "onboarding-deck.pptx", pptx,
                         "slides", slide_count(pptx)))
    return found


def timed_parse(case: Case, runs: int) -> tuple[float, float, ParsedDocument]:
    parsed = parse_document(case.filename, case.data)  # warm-up: imports, lazy modules
    walls, cpus = [], []
    for _ in range(runs):
        cpu, wall = time.process_time(), time.perf_counter()
        parsed = parse_document(case.filename, case.data)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), parsed


def parse_rates(runs: int, scale: float) -> None:
    print(f"## Parse rates (parse_document in-process, median of {runs} runs)\n")
    with tempfile.TemporaryDirectory(prefix="office_bench_") as folder:
        found = cases(Path(folder), scale)
        print(f"- load average before: {load()}")
        print("\n| input | KB | count | wall s | CPU s | per s (wall) | per s (CPU) "
              "| sections | blocks | warnings |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for case in found:
            wall, cpu, parsed = timed_parse(case, runs)
            blocks = sum(len(section.blocks) for section in parsed.sections)
            print(f"| {case.label} | {len(case.data) / 1024:,.0f} | {case.count:,} {case.unit} "
                  f"| {wall:.3f} | {cpu:.3f} | {case.count / wall:,.0f} {case.unit} "
                  f"| {case.count / cpu:,.0f} | {len(parsed.sections):,} | {blocks:,} "
                  f"| {len(parsed.warnings)} |")
        print(f"\n- load average after: {load()}\n")


def ensure_worktree(path: Path, revision: str) -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", revision], check=True,
                            capture_output=True, text=True).stdout.strip()
    if not path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", str(path), revision],
                       check=True, capture_output=True)
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    if head != commit:
        raise SystemExit(f"{path} is at {head}, not {revision} ({commit})")


def corpus(revision: str, folder: Path) -> list[str]:
    """Copies of the sample files committed at `revision` (the corpus the old code knew)."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", revision,
                            "samples/"], check=True, capture_output=True, text=True).stdout.split()
    for name in names:
        shutil.copy(ROOT / name, folder / Path(name).name)
    return sorted(Path(name).name for name in names)


def child_env(data_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSIFT_")}
    env["RAGSIFT_DATA_DIR"] = str(data_dir)
    return env


def where(src: Path) -> list[str]:
    paths = subprocess.run([str(PYTHON), "-c", WHERE.format(src=str(src))], check=True,
                           capture_output=True, text=True, cwd=tempfile.gettempdir(),
                           ).stdout.split()
    if not all(Path(path).is_relative_to(src) for path in paths):
        raise SystemExit(f"ragsift does not resolve into {src}: {paths}")
    return paths


def ingest(variant: str, src: Path, inputs: Path, scratch: Path, number: int) -> Run:
    data_dir = scratch / f"data-{variant}-{number}"  # fresh: nothing cached, no KB
    load1 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(
        [str(PYTHON), "-c", CLI.format(src=str(src)), "ingest", str(inputs), "--kb", "bench"],
        env=child_env(data_dir), capture_output=True, text=True, cwd=scratch,
    )
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{variant} ingest failed ({done.returncode}):\n{done.stdout}"
                         f"\n{done.stderr}")
    cache = data_dir / "cache" / "embeddings.sqlite"
    if not cache.is_file():
        raise SystemExit(f"no embedding cache at {cache}: the cache lives elsewhere")
    with sqlite3.connect(cache) as connection:
        cached = connection.execute("SELECT count(*) FROM passage_embeddings").fetchone()[0]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    chunks = {Path(path).name: int(count) for path, count in CHUNKS.findall(done.stdout)}
    shutil.rmtree(data_dir)
    return Run(variant, load1, wall, cpu, chunks, cached)


def ingest_comparison(runs: int, revision: str, worktree: Path) -> None:
    print(f"## Ingest of the text corpus: old ({revision}) vs new (working tree)\n")
    ensure_worktree(worktree, revision)
    sources = {"old": worktree / "src", "new": ROOT / "src"}
    with tempfile.TemporaryDirectory(prefix="office_ingest_") as folder:
        scratch = Path(folder)
        inputs = scratch / "corpus"
        inputs.mkdir()
        names = corpus(revision, inputs)
        print(f"- corpus ({len(names)} files, samples/ at {revision}): {', '.join(names)}")
        for variant, src in sources.items():
            print(f"- {variant}: ragsift resolves to {', '.join(where(src))}")
        print(f"- load average before: {load()}")
        results: list[Run] = []
        for number in range(runs):
            order = ["old", "new"] if number % 2 == 0 else ["new", "old"]
            for variant in order:
                results.append(ingest(variant, sources[variant], inputs, scratch, number))
        print(f"- load average after: {load()}\n")
    report_ingest(results, names)


def report_ingest(results: list[Run], names: list[str]) -> None:
    print("| # | variant | load1 at start | wall s | child CPU s | chunks | cached embeddings |")
    print("|---|---|---|---|---|---|---|")
    for number, run in enumerate(results, 1):
        print(f"| {number} | {run.variant} | {run.load1:.2f} | {run.wall_s:.2f} "
              f"| {run.cpu_s:.2f} | {sum(run.chunks.values())} | {run.cached} |")
    medians = {}
    for variant in ("old", "new"):
        mine = [run for run in results if run.variant == variant]
        medians[variant] = (statistics.median(run.wall_s for run in mine),
                            statistics.median(run.cpu_s for run in mine))
    print("\n| variant | median wall s | median child CPU s |")
    print("|---|---|---|")
    for variant, (wall, cpu) in medians.items():
        print(f"| {variant} | {wall:.2f} | {cpu:.2f} |")
    print(f"| new/old | {medians['new'][0] / medians['old'][0]:.2f} "
          f"| {medians['new'][1] / medians['old'][1]:.2f} |")
    print("\n| file | old chunks | new chunks |")
    print("|---|---|---|")
    counts: dict[str, dict[str, int]] = {}
    for run in results:
        counts.setdefault(run.variant, run.chunks)  # the first run's; compared below
    for name in names:
        print(f"| {name} | {counts['old'].get(name, '-')} | {counts['new'].get(name, '-')} |")
    print(f"| **total** | {sum(counts['old'].values())} | {sum(counts['new'].values())} |")
    steady = all(run.chunks == counts[run.variant] for run in results)
    print(f"\n- chunk counts {'equal' if steady else 'DIFFER'} across runs of each variant; the "
          "new PDF parser puts headings into heading paths (sections per heading, not per "
          "page), so the PDFs' counts differ between old and new; the others' should not.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed parses per input")
    parser.add_argument("--scale", type=float, default=1.0, help="size factor of the generated")
    parser.add_argument("--ingest-runs", type=int, default=3, help="CLI ingests per variant")
    parser.add_argument("--revision", default="b99c722", help="the old code's commit")
    parser.add_argument("--worktree", type=Path, default=Path("/tmp/ragsift-old"))
    parser.add_argument("--keep-worktree", action="store_true")
    parser.add_argument("--skip-parse", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true")
    args = parser.parse_args()
    print("# Office formats benchmark\n")
    print(f"- {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}; "
          f"{machine()}; load average (1/5/15 min) at start {load()}\n")
    try:
        if not args.skip_parse:
            parse_rates(args.runs, args.scale)
        if not args.skip_ingest:
            ingest_comparison(args.ingest_runs, args.revision, args.worktree)
    finally:
        if not args.skip_ingest and not args.keep_worktree and args.worktree.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(args.worktree)], check=True)
    print(f"\n- load average at end: {load()}")


if __name__ == "__main__":
    main()
