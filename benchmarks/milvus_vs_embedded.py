"""The search_latency.py workload on milvus-lite and on the embedded index, side by side.

Usage (from benchmarks/): python milvus_vs_embedded.py [--chunks 100000] [--queries 50]
[--output FILE]. Needs the `milvus` extra. Both backends get the same chunks, vectors,
queries and filters in one run, interleaved (each batch and each query goes to one index
and then to the other), so the ratios hold even on a busy machine whose absolute times are
noisy. milvus-lite is pure Python (its BM25 analysis runs jieba per row), so its
ingest of 100k chunks takes minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from search_latency import (
    BATCH,
    DIMENSION,
    KBS,
    TOP_K,
    cpu_model,
    fuse,
    make_text,
    make_workload,
)

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.milvus import MilvusIndex
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.ports import SearchIndex

KINDS = ("kb only", "kb + scope", "kb + 50 docs")
CHANNELS = ("dense", "sparse", "hybrid (ragsift RRF)", "hybrid (Milvus RRFRanker)")

Case = tuple[str, NDArray[np.float32], SearchFilter]


def ingest(
    indexes: dict[str, SearchIndex], records: list[IndexRecord], vectors: NDArray[np.float32]
) -> dict[str, float]:
    """Seconds each index spends upserting every chunk, in batches of one kb (as ingestion
    writes them); each batch goes to one index and then the other, so both see the same load."""
    order = sorted(range(len(records)), key=lambda i: records[i].kb_id)
    spent = dict.fromkeys(indexes, 0.0)
    for lo in range(0, len(order), BATCH):
        rows = order[lo : lo + BATCH]
        batch = [records[i] for i in rows]
        for name, index in indexes.items():
            start = time.perf_counter()
            index.upsert(batch, vectors[rows])
            spent[name] += time.perf_counter() - start
    return spent


def make_cases(
    rng: np.random.Generator, words: list[str], probs: NDArray[np.float64], doc_ids: list[str],
    kb_of: dict[str, str], queries: int,
) -> dict[str, list[Case]]:
    """The same queries under each filter kind (as search_latency.py defines them)."""
    texts = [make_text(rng, words, probs, int(rng.integers(3, 9))) for _ in range(queries)]
    vecs = rng.standard_normal((queries, DIMENSION), dtype=np.float32)
    kb_docs = {kb: [d for d in doc_ids if kb_of[d] == kb] for kb in set(kb_of.values())}
    cases: dict[str, list[Case]] = {}
    for kind in KINDS:
        rows: list[Case] = []
        for i in range(queries):
            kb = f"kb-{i % KBS}"
            if kind == "kb + scope":
                flt = SearchFilter(kb_id=kb, sources=frozenset({"wiki", "manual"}),
                                   visibilities=frozenset({"public"}))
            elif kind == "kb + 50 docs":
                picked = rng.choice(kb_docs[kb], size=min(50, len(kb_docs[kb])), replace=False)
                flt = SearchFilter(kb_id=kb, document_ids=frozenset(str(d) for d in picked))
            else:
                flt = SearchFilter(kb_id=kb)
            rows.append((texts[i], vecs[i], flt))
        cases[kind] = rows
    return cases


def searches(index: SearchIndex, pool: ThreadPoolExecutor) -> dict[str, Callable[[Case], object]]:
    """One callable per measured channel; Milvus' own hybrid only where the index has it."""

    def hybrid(case: Case) -> object:
        text, vec, flt = case
        dense = pool.submit(index.search_dense, vec, flt, TOP_K)
        sparse = pool.submit(index.search_sparse, text, flt, TOP_K)
        return fuse(dense.result(), sparse.result(), TOP_K)

    out: dict[str, Callable[[Case], object]] = {
        "dense": lambda c: index.search_dense(c[1], c[2], TOP_K),
        "sparse": lambda c: index.search_sparse(c[0], c[2], TOP_K),
        "hybrid (ragsift RRF)": hybrid,
    }
    if isinstance(index, MilvusIndex):
        milvus = index
        out["hybrid (Milvus RRFRanker)"] = lambda c: milvus.search_hybrid(
            c[1], c[0], c[2], TOP_K, ranker="rrf", rrf_k=60
        )
    return out


def p50s(
    indexes: dict[str, SearchIndex], cases: dict[str, list[Case]]
) -> dict[str, dict[tuple[str, str], float]]:
    """Median latency in ms per index and (filter kind, channel); every query runs on one
    index right after the other, so a busy machine slows both alike."""
    pool = ThreadPoolExecutor(max_workers=2)
    calls = {name: searches(index, pool) for name, index in indexes.items()}
    samples: dict[str, dict[tuple[str, str], list[float]]] = {name: {} for name in indexes}
    for kind, rows in cases.items():
        for case in rows[:3]:  # warm-up
            for name in indexes:
                calls[name]["hybrid (ragsift RRF)"](case)
        for channel in CHANNELS:
            for case in rows:
                for name in indexes:
                    call = calls[name].get(channel)
                    if call is None:
                        continue
                    start = time.perf_counter()
                    call(case)
                    elapsed = (time.perf_counter() - start) * 1000
                    samples[name].setdefault((kind, channel), []).append(elapsed)
    pool.shutdown()
    return {
        name: {cell: statistics.median(values) for cell, values in cells.items()}
        for name, cells in samples.items()
    }


def run(chunks: int, queries: int, seed: int) -> str:
    """Ingest and search the same workload on both backends; the markdown report."""
    rng = np.random.default_rng(seed)
    words, probs, doc_ids, kb_of, records, vectors = make_workload(rng, chunks)
    cases = make_cases(rng, words, probs, doc_ids, kb_of, queries)
    with tempfile.TemporaryDirectory() as tmp:
        openers: dict[str, Callable[[], SearchIndex]] = {
            "embedded": lambda: EmbeddedIndex(Path(tmp) / "embedded", DIMENSION),
            "milvus-lite": lambda: MilvusIndex(str(Path(tmp) / "milvus.db"), "chunks", DIMENSION),
        }
        indexes = {name: open_index() for name, open_index in openers.items()}
        spent = ingest(indexes, records, vectors)
        rates = {name: chunks / seconds for name, seconds in spent.items()}
        logging.info("ingested %d chunks: %s s", chunks, {k: round(v) for k, v in spent.items()})
        reopen: dict[str, float] = {}
        for name, open_index in openers.items():
            indexes[name].close()  # milvus-lite finishes building its segment indexes here
            start = time.perf_counter()
            indexes[name] = open_index()
            reopen[name] = time.perf_counter() - start
        latency = p50s(indexes, cases)
        for index in indexes.values():
            index.close()
    return report(chunks, queries, rates, reopen, latency)


def report(
    chunks: int, queries: int, rates: dict[str, float], reopen: dict[str, float],
    latency: dict[str, dict[tuple[str, str], float]],
) -> str:
    """The markdown section: p50 per backend and the milvus-lite / embedded ratio."""
    emb, mil = latency["embedded"], latency["milvus-lite"]
    lines = [
        "## milvus-lite vs the embedded index (same workload, one run)",
        "",
        f"- date: {dt.date.today().isoformat()}; machine: {len(os.sched_getaffinity(0))} CPUs "
        f"(nproc), {cpu_model()}; Python {platform.python_version()}",
        f"- chunks: {chunks:,} (the search_latency.py workload: 5 kbs, dim {DIMENSION}, "
        f"60-120 Chinese/English words each); {queries} queries per cell; top-{TOP_K}",
        f"- ingest (upsert in batches of {BATCH} chunks of one kb, alternating between the "
        f"backends, no embedding): embedded "
        f"{rates['embedded']:,.0f} chunks/s, milvus-lite {rates['milvus-lite']:,.0f} chunks/s: "
        f"embedded **{rates['embedded'] / rates['milvus-lite']:,.0f}x** faster",
        f"- reopen (close, open again): embedded {reopen['embedded']:.2f} s, "
        f"milvus-lite {reopen['milvus-lite']:.2f} s",
        "",
        "Each query runs on one backend right after the other (same load on both).",
        "",
        "| filter | search | embedded p50 | milvus-lite p50 | milvus-lite / embedded |",
        "|---|---|---|---|---|",
    ]
    for kind in KINDS:
        for channel in CHANNELS:
            m = mil[(kind, channel)]
            if (kind, channel) in emb:
                e = emb[(kind, channel)]
                lines.append(f"| {kind} | {channel} | {e:.2f} ms | {m:.1f} ms | {m / e:,.0f}x |")
            else:
                ours = emb[(kind, "hybrid (ragsift RRF)")]
                lines.append(
                    f"| {kind} | {channel} | (n/a; vs. embedded ragsift RRF) | {m:.1f} ms "
                    f"| {m / ours:,.0f}x |"
                )
    return "\n".join([*lines, ""])


def main() -> None:
    """Parse arguments, run both backends, print and optionally save the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    text = run(args.chunks, args.queries, args.seed)
    print(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
