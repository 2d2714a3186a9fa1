"""OCR cost per page: render time, and pages/s with 1 and 2 worker processes, CPU next to wall.

The pages are every page of samples/*.pdf, rendered by pypdfium2 at RAGSIFT_OCR_RENDER_DPI's
default (150 dpi) in this process, then read by RapidOCR in worker processes started with
`spawn` (no ONNX state shared), each with its own engine (ocr.create_engine). Workers load their
engine and OCR a warm-up image before a barrier, so the timed phase is OCR alone; they pull page
numbers from one queue, so two workers share the pages however long each takes.

Each configuration is (worker processes, ONNX threads per session): the production setting is
1 thread per process (ocr.ENGINE_THREADS), one document per worker process on 2 cores; -1 is
onnxruntime's default (a thread per core). CPU seconds are the workers' process_time() over
the timed phase, so CPU s/page compares how much work each setting spends per page, and the
load average before and after shows whether other work shared the cores.

Usage: python benchmarks/ocr_pages.py [--repeat 2] [--configs 1x1,1x-1,2x1,2x-1] [--dpi 150]
"""

from __future__ import annotations

import argparse
import io
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragsift.ingestion.parsers.limits import ParseLimits  # noqa: E402
from ragsift.ingestion.parsers.pdf_pages import page_count, render_page  # noqa: E402


@dataclass(frozen=True)
class Result:
    config: str
    pages: int
    lines: int
    wall_s: float
    cpu_s: float


def render_samples(dpi: int) -> tuple[list[bytes], list[float]]:
    """Every page of samples/*.pdf as PNG bytes, and the render time of each page."""
    pages: list[bytes] = []
    times: list[float] = []
    for path in sorted((ROOT / "samples").glob("*.pdf")):
        data = path.read_bytes()
        for number in range(1, page_count(data) + 1):
            started = time.perf_counter()
            image = render_page(data, number, dpi=dpi, limits=ParseLimits())
            times.append(time.perf_counter() - started)
            out = io.BytesIO()
            image.save(out, format="PNG")
            pages.append(out.getvalue())
        print(f"  {path.name}: {page_count(data)} pages")
    return pages, times


def worker(
    threads: int, pages: list[bytes], todo: Any, done: Any, barrier: Barrier
) -> None:
    """Load an engine, warm it up, wait for the others, then OCR pages until the queue is empty."""
    from PIL import Image

    from ragsift.ingestion.parsers import ocr

    engine = ocr.create_engine(threads)
    budget = ocr.OcrBudget(ParseLimits(ocr_timeout_s=3600))
    ocr.read_lines(Image.open(io.BytesIO(pages[0])).convert("RGB"), budget, engine=engine)
    images = [Image.open(io.BytesIO(page)).convert("RGB") for page in pages]  # decode untimed
    barrier.wait()
    cpu, wall, count, lines = time.process_time(), time.perf_counter(), 0, 0
    while (index := todo.get()) is not None:
        lines += len(ocr.read_lines(images[index], budget, engine=engine))
        count += 1
    done.put((count, lines, time.process_time() - cpu, time.perf_counter() - wall))


def run(processes: int, threads: int, pages: list[bytes], repeat: int) -> Result:
    context = mp.get_context("spawn")
    todo, done = context.Queue(), context.Queue()
    barrier = context.Barrier(processes + 1)
    for _ in range(repeat):
        for index in range(len(pages)):
            todo.put(index)
    for _ in range(processes):
        todo.put(None)
    workers = [
        context.Process(target=worker, args=(threads, pages, todo, done, barrier))
        for _ in range(processes)
    ]
    for process in workers:
        process.start()
    barrier.wait()
    started = time.perf_counter()
    reports = [done.get() for _ in workers]
    wall = time.perf_counter() - started
    for process in workers:
        process.join()
    return Result(
        f"{processes} proc x {threads} thr", sum(r[0] for r in reports),
        sum(r[1] for r in reports), wall, sum(r[2] for r in reports),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="OCR each page this many times")
    parser.add_argument("--configs", default="1x1,1x-1,2x1,2x-1",
                        help="processes x ONNX threads, comma separated")
    parser.add_argument("--dpi", type=int, default=ParseLimits().ocr_render_dpi)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(f"{platform.processor() or platform.machine()}, {cores} cores usable, "
          f"Python {platform.python_version()}, load average {os.getloadavg()}")
    print(f"rendering samples/*.pdf at {args.dpi} dpi")
    pages, render_times = render_samples(args.dpi)
    print(f"render: {len(pages)} pages, median {statistics.median(render_times) * 1000:.0f} ms, "
          f"max {max(render_times) * 1000:.0f} ms per page")
    print()
    print(f"{'config':<18} {'pages':>5} {'lines':>6} {'wall s':>7} {'pages/s':>8} "
          f"{'CPU s':>7} {'CPU s/page':>10} {'load before -> after':>22}")
    for config in args.configs.split(","):
        processes, threads = (int(part) for part in config.split("x"))
        before = os.getloadavg()[0]
        result = run(processes, threads, pages, args.repeat)
        after = os.getloadavg()[0]
        print(f"{result.config:<18} {result.pages:>5} {result.lines:>6} {result.wall_s:>7.1f} "
              f"{result.pages / result.wall_s:>8.2f} {result.cpu_s:>7.1f} "
              f"{result.cpu_s / result.pages:>10.2f} {before:>11.2f} -> {after:.2f}")


if __name__ == "__main__":
    main()
