"""PDF parse time, old (pypdf text) against new (PDFium text with boxes, headings, images).

`old` is src/ragsift/ingestion/parsers/pdf.py of a git revision (default HEAD), written to a
temporary file and imported as a module of its own; `new` is the working tree's parse_pdf. Both
parse the same bytes in this process, interleaved (old, new, new, old, ... per round, so a
change of machine load hits both), after one warm-up parse each (imports, the OCR engine). CPU
seconds are this process's (time.process_time), wall seconds time.perf_counter; the load
average is read before and after. Files: samples/*.pdf that the old parser reads (a scanned PDF
it rejects is left out) and reportlab-generated documents: English prose with headings and a
table, Chinese in a CID font, and a two-column layout.

`new` parses with OCR off, like for like (the old parser has no OCR); `new+ocr` (default
limits) adds what OCR of images and scanned pages costs where rapidocr is installed.

Usage: python benchmarks/pdf_parse.py [--rounds 7] [--repeat 3] [--revision HEAD]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import (
    BaseDocTemplate,
    Frame,
    PageTemplate,
    Paragraph,
    SimpleDocTemplate,
    Table,
)

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.limits import ParseLimits
from ragsift.ingestion.parsers.pdf import parse_pdf

ROOT = Path(__file__).resolve().parents[1]
OLD_PATH = "src/ragsift/ingestion/parsers/pdf.py"
NO_OCR = ParseLimits(ocr="off")
ENGLISH = (
    "The branch office reaches the data centre through the firewall and an encrypted tunnel; "
    "every rule names its owner, its ticket and the application it serves, and rules without "
    "an owner are removed at the quarterly review. "
)
CHINESE = (
    "公司对业务数据采用备份策略：至少保留三份数据副本，使用两种不同的存储介质，其中一份存放在"
    "异地。核心业务系统每天进行增量备份，每周进行一次全量备份。"
)


def old_module(revision: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{revision}:{OLD_PATH}"], cwd=ROOT, capture_output=True, check=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="pdf_old_")) / "pdf_old.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("pdf_old", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prose_pdf(pages: int, font: str = "Helvetica", text: str = ENGLISH) -> bytes:
    body = ParagraphStyle("b", fontName=font, fontSize=10.5, leading=14, spaceBefore=6,
                          wordWrap="CJK" if font != "Helvetica" else None)
    heading = ParagraphStyle("h", fontName=font, fontSize=15, leading=20, spaceBefore=12)
    story: list[Any] = []
    for section in range(pages * 2):
        story.append(Paragraph(f"{section + 1}. Section {section + 1}", heading))
        story.extend(Paragraph(text * 3, body) for _ in range(3))
        if section % 4 == 3:
            rows = [["Rule", "Source", "Port"]] + [[f"R{i}", f"10.20.{i}.0/24", "443"]
                                                   for i in range(8)]
            story.append(Table(rows))
    out = io.BytesIO()
    SimpleDocTemplate(out, pagesize=A4, invariant=1).build(story)
    return out.getvalue()


def two_column_pdf(pages: int) -> bytes:
    out = io.BytesIO()
    document = BaseDocTemplate(out, pagesize=A4, invariant=1)
    width = (document.width - 12) / 2
    frames = [
        Frame(document.leftMargin, document.bottomMargin, width, document.height, id="left"),
        Frame(document.leftMargin + width + 12, document.bottomMargin, width, document.height,
              id="right"),
    ]
    document.addPageTemplates([PageTemplate(frames=frames)])
    body = ParagraphStyle("b", fontName="Helvetica", fontSize=9.5, leading=12, spaceBefore=4)
    document.build([Paragraph(ENGLISH * 2, body) for _ in range(pages * 20)])
    return out.getvalue()


def inputs() -> dict[str, bytes]:
    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    files = {path.name: path.read_bytes() for path in sorted((ROOT / "samples").glob("*.pdf"))}
    files["generated-en-20p.pdf"] = prose_pdf(20)
    files["generated-zh-10p.pdf"] = prose_pdf(10, "STSong-Light", CHINESE)
    files["generated-2col-10p.pdf"] = two_column_pdf(10)
    return files


def timed(parse: Callable[[bytes], object], data: bytes, repeat: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        parse(data)
    return (time.process_time() - cpu) / repeat, (time.perf_counter() - wall) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--revision", default="HEAD")
    parser.add_argument("--no-ocr-row", action="store_true", help="skip the new+ocr variant")
    args = parser.parse_args()
    old = old_module(args.revision)
    variants: dict[str, Callable[[bytes], object]] = {
        "old": old.parse_pdf,
        "new": lambda data: parse_pdf(data, NO_OCR),
    }
    if not args.no_ocr_row:
        variants["new+ocr"] = parse_pdf
    files = {}
    for name, data in inputs().items():
        try:
            old.parse_pdf(data)
        except DocumentRejected as exc:
            print(f"left out {name}: the old parser rejects it ({exc})")
            continue
        for parse in variants.values():
            parse(data)  # warm-up: imports, caches, the OCR engine
        files[name] = data
    load_before = os.getloadavg()
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    names = list(variants)
    for round_number in range(args.rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        for name, data in files.items():
            for variant in order:
                results.setdefault((name, variant), []).append(
                    timed(variants[variant], data, args.repeat)
                )
    load_after = os.getloadavg()
    report(files, names, results, args, load_before, load_after)


def report(
    files: dict[str, bytes], names: list[str],
    results: dict[tuple[str, str], list[tuple[float, float]]], args: argparse.Namespace,
    load_before: tuple[float, float, float], load_after: tuple[float, float, float],
) -> None:
    print(f"- python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{platform.processor() or platform.machine()}; old = {args.revision}:{OLD_PATH}")
    print(f"- load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; "
          f"{args.rounds} interleaved rounds x {args.repeat} parses; medians per parse")
    print()
    header = " | ".join(f"{variant} CPU ms | {variant} wall ms" for variant in names)
    print(f"| file | KB | {header} | new/old CPU |")
    print("|---|---|" + "---|---|" * len(names) + "---|")
    totals = {variant: [0.0, 0.0] for variant in names}
    for name, data in files.items():
        cells = []
        for variant in names:
            cpu = statistics.median(c for c, _ in results[(name, variant)])
            wall = statistics.median(w for _, w in results[(name, variant)])
            totals[variant][0] += cpu
            totals[variant][1] += wall
            cells.append(f"{cpu * 1000:.1f} | {wall * 1000:.1f}")
        ratio = statistics.median(c for c, _ in results[(name, "new")]) / statistics.median(
            c for c, _ in results[(name, "old")]
        )
        print(f"| {name} | {len(data) / 1024:.0f} | {' | '.join(cells)} | {ratio:.2f} |")
    cells = [f"{cpu * 1000:.1f} | {wall * 1000:.1f}" for cpu, wall in totals.values()]
    ratio = totals["new"][0] / totals["old"][0]
    print(f"| **total** | | {' | '.join(cells)} | {ratio:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
