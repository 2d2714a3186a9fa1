"""What the second dense channel (USE multilingual) costs: ingest and query (issue 18).

Ingest: the same texts through `ragsift ingest` (bootstrap.build on a fresh data dir,
`ingest_files`, as embedder_routes.py runs it) with RAGSIFT_SECOND_DENSE=off and =use, and the
default e5 route's `embed_passages` alone, interleaved round by round (order reversed every
other round). Corpora: kuake-qtr titles (short Chinese) and scifact abstracts (~300 English
tokens). Query: USE's query encoding and an exact search of the second store at 100k rows
(512-d, clustered random vectors, kb filter allowing all / 10%), against e5's query encoding.

CPU = this process's `time.process_time` plus children's; wall and the 1-minute load average
are next to every figure.

Usage: python benchmarks/second_dense_cost.py [--titles 480] [--abstracts 40] [--rounds 2]
       [--rows 100000] [--output /tmp/bench_second_dense.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from embedder_routes import _machine, alone_run, corpus, ingest_run

from ragsift import bootstrap
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.adapters.onnx_e5.embedder import forget_shared_runtimes
from ragsift.adapters.use_encoder import UseEncoder, forget_shared_model
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

Run = tuple[float, float, int, float]  # CPU s, wall s, texts done, load 1-min after


def warm_alone_run(texts: Sequence[str], batch: int) -> Run:
    model = bootstrap.build_local_embedder(Settings())
    model.embed_passages(["预热 warm-up"])
    return alone_run(model, texts, batch)


def cold_ingest_run(texts: Sequence[str], second: str) -> Run:
    """An ingest as a fresh `ragsift ingest` process runs it: the models this process shares
    between containers are dropped first, so each run loads its own."""
    forget_shared_runtimes()
    forget_shared_model()
    return ingest_run("auto", texts, second_dense=second)


def query_costs(rows: int, queries: Sequence[str]) -> list[str]:
    """CPU ms per query: e5 and USE encodings, and exact searches of a 512-d store of `rows`."""
    use, e5 = UseEncoder(), bootstrap.build_local_embedder(Settings())
    use.embed_query("warm-up")
    e5.embed_query("warm-up")
    out = []
    for name, encode in (("e5 query encoding", e5.embed_query),
                         ("USE query encoding", use.embed_query)):
        start = time.process_time()
        for query in queries:
            encode(query)
        out.append(f"| {name} | {(time.process_time() - start) / len(queries) * 1000:.2f} | "
                   f"{os.getloadavg()[0]:.2f} |")
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((2000, 512)).astype(np.float32)
    matrix = centres[rng.integers(0, 2000, rows)] + 0.5 * rng.standard_normal(
        (rows, 512)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = DenseMatrixStore(Path(tmp), 512)
        for start in range(0, rows, 10_000):
            store.upsert([IndexRecord(chunk_id=f"c{i}", document_id=f"d{i // 10}",
                                      kb_id="big" if i % 10 else "small", text="")
                          for i in range(start, min(start + 10_000, rows))],
                         matrix[start:start + 10_000])
        vectors = [use.embed_query(q) for q in queries]
        for label, search_filter in (("all rows", SearchFilter(kb_id="big")),
                                     ("10% of rows", SearchFilter(kb_id="small"))):
            store.search(vectors[0], search_filter, 100)  # the filter's candidate rows
            start = time.process_time()
            for vector in vectors:
                store.search(vector, search_filter, 100)
            per = (time.process_time() - start) / len(vectors) * 1000
            out.append(f"| USE exact search, {rows:,} rows, kb = {label} | {per:.2f} | "
                       f"{os.getloadavg()[0]:.2f} |")
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--titles", type=int, default=480)
    parser.add_argument("--abstracts", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--output", type=Path, default=Path("/tmp/bench_second_dense.md"))
    args = parser.parse_args()
    batch = Settings().embedding_batch_size
    corpora = {"kuake-qtr titles": corpus("kuake-qtr", args.titles),
               "scifact abstracts": corpus("scifact", args.abstracts)}
    load_before = os.getloadavg()
    configs: list[tuple[str, Callable[[Sequence[str]], Run]]] = [
        ("e5 alone", lambda t: warm_alone_run(t, batch)),
        ("ingest, second dense off", lambda t: cold_ingest_run(t, "off")),
        ("ingest, second dense USE", lambda t: cold_ingest_run(t, "use")),
    ]
    samples: dict[tuple[str, str], list[Run]] = {}
    for round_ in range(args.rounds):
        for name, texts in corpora.items():
            for label, run in (configs if round_ % 2 == 0 else configs[::-1]):
                samples.setdefault((name, label), []).append(run(texts))
                print(name, label, samples[(name, label)][-1], flush=True)
    queries = corpus("kuake-qtr", 50) + [t[:200] for t in corpus("scifact", 50)]
    report = _report(args, corpora, samples, query_costs(args.rows, queries), load_before)
    args.output.write_text(report, encoding="utf-8")
    print(report)


def _report(args: argparse.Namespace, corpora: dict[str, list[str]],
            samples: dict[tuple[str, str], list[Run]], queries: list[str],
            load_before: tuple[float, float, float]) -> str:
    lines = [
        "# The second dense channel's cost",
        "",
        f"- date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
        f"- machine: {_machine()}; Python {platform.python_version()} ({sys.platform})",
        f"- load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"- {args.rounds} rounds, configurations interleaved; medians",
        "",
        "| corpus | config | texts/CPU-s | texts/wall-s | CPU s (runs) | load 1-min (runs) "
        "| done |",
        "|---|---|---:|---:|---|---|---:|",
    ]
    cpu_of: dict[tuple[str, str], float] = {}
    for (name, label), runs in samples.items():
        count = len(corpora[name])
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        cpu_of[(name, label)] = cpu
        lines.append(
            f"| {name} | {label} | {count / cpu:.2f} | {count / wall:.2f} | "
            f"{', '.join(f'{r[0]:.2f}' for r in runs)} | "
            f"{', '.join(f'{r[3]:.1f}' for r in runs)} | {min(r[2] for r in runs)} |")
    lines.append("")
    for name in corpora:
        use = cpu_of[(name, "ingest, second dense USE")]
        lines.append(
            f"- {name}: ingest CPU with USE / without = "
            f"**{use / cpu_of[(name, 'ingest, second dense off')]:.3f}x**; "
            f"with USE / e5 alone = {use / cpu_of[(name, 'e5 alone')]:.2f}x")
    lines += ["", "| query-side step | CPU ms per query | load 1-min |", "|---|---:|---:|",
              *queries]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
