"""Peak memory, time and outcome of parsing hostile files, each in a fresh process.

The fixtures are the tests' own builders (tests/support/hostile.py), so what is measured here is
what the tests reject; a few ordinary files are measured beside them for the cost of the checks.
Each file is parsed by `parse_document` with the default limits in a child process started for
it alone; its CPU time comes from wait4() and its peak RSS from /proc (VmHWM, sampled while it
runs and reported by the child at the end), so a child killed for memory or time is measured
too. `--variant NAME=DIR` runs the same files against another copy of the source (DIR on the
child's PYTHONPATH, e.g. `git archive` of an older commit's `src`).

Usage: python benchmarks/hostile_files.py [--variant base=/tmp/base/src] [--memory-mb 4096]
       [--timeout-s 120] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fixture builders live with the tests

from docx import Document  # noqa: E402
from reportlab.lib.pagesizes import A4  # noqa: E402
from reportlab.pdfgen import canvas  # noqa: E402

from support import hostile  # noqa: E402


@dataclass(frozen=True)
class Fixture:
    name: str
    filename: str
    build: Callable[[], bytes]


def large_docx() -> bytes:
    """An ordinary long document: 300 headings, 6,000 paragraphs, a 200-row table."""
    document = Document()
    for number in range(6_000):
        if number % 20 == 0:
            document.add_heading(f"Section {number // 20}", level=2)
        document.add_paragraph(f"Paragraph {number}: the travel policy applies to everyone. " * 3)
    table = document.add_table(rows=200, cols=4)
    for row_number, row in enumerate(table.rows):
        for column, cell in enumerate(row.cells):
            cell.text = f"r{row_number}c{column}"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def large_pdf() -> bytes:
    """An ordinary 200-page text PDF."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    for page in range(200):
        for line in range(45):
            pdf.drawString(60, 780 - line * 16, f"Page {page} line {line}: hotel limit per night.")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def sample(name: str) -> Callable[[], bytes]:
    return lambda: (ROOT / "samples" / name).read_bytes()


FIXTURES = [
    Fixture("sample DOCX (normal)", "travel-policy-en.docx", sample("travel-policy-en.docx")),
    Fixture("large DOCX (normal, 6,000 paragraphs)", "large.docx", large_docx),
    Fixture("large PDF (normal, 200 pages)", "large.pdf", large_pdf),
    Fixture("DOCX zip bomb: document.xml inflates to 1 GiB", "zip-bomb.docx",
            hostile.zip_bomb_docx),
    Fixture("DOCX member 64 MiB at 1,000:1", "ratio-bomb.docx", hostile.ratio_bomb_docx),
    Fixture("DOCX of 10,017 members", "many-members.docx", hostile.many_members_docx),
    Fixture("DOCX member declares 2 KiB, inflates to 1 GiB", "lying-size.docx",
            hostile.lying_size_docx),
    Fixture("DOCX billion laughs (DTD entities)", "billion-laughs.docx",
            hostile.billion_laughs_docx),
    Fixture("DOCX XML nested 180 deep", "deep.docx", lambda: hostile.deep_docx(60)),
    Fixture("DOCX of 200,001 paragraphs", "paragraphs.docx", hostile.many_paragraphs_docx),
    Fixture("DOCX of 2,000,001 runs in one paragraph", "elements.docx",
            hostile.many_elements_docx),
    Fixture("DOCX of 20,000,001 characters", "long-text.docx", hostile.long_text_docx),
    Fixture("DOCX table merged down 900 rows", "merged-900.docx",
            lambda: hostile.merged_table_docx(rows=900)),
    Fixture("DOCX table merged down 3,000 rows", "merged-3000.docx",
            lambda: hostile.merged_table_docx(rows=3_000)),
    Fixture("HTML 1,000,000 unclosed <div>", "nesting.html", hostile.html_nesting_bomb),
    Fixture("Markdown 1,000,000 list lines", "lines.md", lambda: b"- a\n" * 1_000_000),
    Fixture("PDF content stream inflates to 1 GiB", "stream-bomb.pdf", hostile.pdf_stream_bomb),
    Fixture("PDF 10 pages x 70 MiB streams", "pages-bomb.pdf", hostile.pdf_pages_bomb),
]


# The child imports only what parsing needs, so its peak RSS is the parser's, not the builders'.
CHILD_CODE = """
import json, resource, sys, time
from pathlib import Path
path, memory_mb = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import parse_document
data = Path(path).read_bytes()
try:
    outcome = f"parsed: {len(parse_document(Path(path).name, data).sections)} sections"
except DocumentRejected as exc:
    outcome = f"rejected: {exc}"
except MemoryError:
    outcome = f"MemoryError (over {memory_mb} MB of address space)"
status = Path("/proc/self/status").read_text().split("VmHWM:")[1]
print(json.dumps({"outcome": outcome, "peak_kb": int(status.split()[0])}))
"""


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM of a running process: its own peak RSS since exec (ru_maxrss of a child also counts
    the parent's RSS at fork, so it is not used)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return int(line.split()[1]) / 1024 if line else None


@dataclass(frozen=True)
class Result:
    outcome: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def measure(path: Path, pythonpath: str | None, memory_mb: int, timeout_s: float) -> Result:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-c", CHILD_CODE, str(path), str(memory_mb)],
            stdout=out, stderr=subprocess.DEVNULL, env=env,
        )
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            os.kill(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        peak = [0.0]
        done = threading.Event()

        def sample() -> None:  # until the child exits; a zombie's /proc status has no VmHWM
            while not done.wait(0.02):
                peak[0] = max(peak[0], peak_rss_mb(process.pid) or 0.0)

        sampler = threading.Thread(target=sample)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)  # this child's own CPU time
        done.set()
        sampler.join()
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode(errors="replace").strip()
    if killed.is_set():
        outcome = f"killed after {timeout_s:.0f} s"
    elif text:
        report = json.loads(text.splitlines()[-1])
        outcome = report["outcome"]
        peak[0] = max(peak[0], report["peak_kb"] / 1024)  # exact, if the child got to say it
    else:
        outcome = f"died (exit {process.returncode})"
    return Result(outcome, wall, usage.ru_utime + usage.ru_stime, peak[0])


def machine() -> str:
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )
    cpus = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return f"{cpus} CPUs (nproc), {model}; Python {platform.python_version()}; `uptime`: {load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                        help="also run with DIR first on the child's PYTHONPATH")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space limit of each child (RLIMIT_AS)")
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument("--only", default="", help="substring of the fixture names to run")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    variants: list[tuple[str, str | None]] = [("this tree", None)]
    for variant in args.variant:
        name, _, directory = variant.partition("=")
        variants.append((name, directory))
    lines = [
        f"- date: {dt.date.today().isoformat()}; machine: {machine()}",
        f"- each file in a fresh process, default ParseLimits, RLIMIT_AS {args.memory_mb} MB, "
        f"killed after {args.timeout_s:.0f} s; CPU (user+sys) from wait4(), peak RSS = VmHWM",
        "",
        "| file | on disk | variant | outcome | wall | CPU | peak RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in FIXTURES:
            if args.only not in fixture.name:
                continue
            path = Path(tmp) / fixture.filename
            path.write_bytes(fixture.build())
            size = path.stat().st_size
            for name, pythonpath in variants:
                result = measure(path, pythonpath, args.memory_mb, args.timeout_s)
                outcome = result.outcome.replace("|", "\\|")
                outcome = outcome if len(outcome) <= 150 else outcome[:147] + "..."
                row = (
                    f"| {fixture.name} | {size / 1024:,.0f} KB | {name} | {outcome} | "
                    f"{result.wall_s:.2f} s | {result.cpu_s:.2f} s | "
                    f"{result.peak_rss_mb:,.0f} MB |"
                )
                print(row, flush=True)
                lines.append(row)
            path.unlink()
    report = "\n".join(lines) + "\n"
    print(report)
    if args.output:
        args.output.write_text(report)


if __name__ == "__main__":
    main()
