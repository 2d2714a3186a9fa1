"""Ingest rate and search latency of the embedded index on synthetic bilingual chunks.

Usage: python benchmarks/search_latency.py [--chunks 100000] [--queries 200] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from pipeline_cost import (
    load_facts,
    markdown_document,
    p50_p95,
    pipeline_ingest_rate,
    service_latencies,
)

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.sql import SqlRepository
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.retrieval.fusion import rrf

DIMENSION = 384
DOCUMENTS = 2000
KBS = 5
TOP_K = 30
BATCH = 512

# Common characters; random pairs and triples of them make a few thousand "Chinese words".
HANZI = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过"
    "子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体"
    "制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内"
    "数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提"
    "直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计"
    "别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海"
    "口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身"
    "车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石"
)
ENGLISH_TEXT = (
    "the of and to in is for on with as by at from that this be are or an it was which not have "
    "server client index query latency vector search document chunk token model embedding cache "
    "request response error timeout config deploy cluster node shard replica backup restore user "
    "tenant dataset policy access role admin report metric invoice order payment refund shipping "
    "warranty battery screen camera firmware update version release patch install driver network"
)
ENGLISH = ENGLISH_TEXT.split(" ")


def build_vocabulary(rng: np.random.Generator) -> tuple[list[str], NDArray[np.float64]]:
    """A few thousand Chinese and English words with Zipf-like draw probabilities."""
    chars = list(HANZI)
    chinese = {"".join(rng.choice(chars, size=int(rng.integers(2, 4)))) for _ in range(3000)}
    syllables = ["ka", "lo", "mi", "ren", "tor", "vex", "qui", "zan", "del", "por", "sen"]
    english = set(ENGLISH)
    while len(english) < 1500:
        english.add("".join(rng.choice(syllables, size=int(rng.integers(2, 4)))))
    codes = [f"v{i}.{j}" for i in range(1, 6) for j in range(10)] + [f"x{n}" for n in range(50)]
    words = sorted(chinese) + sorted(english) + codes
    order = rng.permutation(len(words))
    words = [words[i] for i in order]
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    return words, weights / weights.sum()


def make_text(
    rng: np.random.Generator, words: list[str], probs: NDArray[np.float64], n: int
) -> str:
    """Mixed text: Chinese words run together, English words separated by spaces."""
    parts: list[str] = []
    for word in rng.choice(words, size=n, p=probs):
        parts.append(word if "\u4e00" <= word[0] <= "\u9fff" else f" {word} ")
    return "".join(parts).strip()


def fuse(dense: list[ChannelHit], sparse: list[ChannelHit], limit: int) -> list[str]:
    """ragsift's own RRF (k=60) over the two channel lists."""
    lists = [RankedList(name="dense:original", hits=tuple(dense)),
             RankedList(name="sparse:original", hits=tuple(sparse))]
    return [hit.chunk_id for hit in rrf(lists, k=60)[:limit]]


def percentile(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) of the samples, in the samples' unit."""
    return float(np.quantile(np.asarray(samples), q))


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    """Latencies in milliseconds of `runs` calls."""
    out: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def cpu_model() -> str:
    """The CPU model line of /proc/cpuinfo, or the platform's processor name."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def make_workload(
    rng: np.random.Generator, chunks: int
) -> tuple[list[str], NDArray[np.float64], list[str], dict[str, str], list[IndexRecord],
           NDArray[np.float32]]:
    """The synthetic corpus: vocabulary, document ids, kb of each document, chunks, vectors."""
    words, probs = build_vocabulary(rng)
    per_doc = max(1, chunks // DOCUMENTS)
    doc_ids = [f"doc-{d:05d}" for d in range(DOCUMENTS)]
    kb_of = {doc: f"kb-{d % KBS}" for d, doc in enumerate(doc_ids)}
    records = [
        IndexRecord(
            chunk_id=f"{doc_ids[(i // per_doc) % DOCUMENTS]}-{i:07d}",
            document_id=doc_ids[(i // per_doc) % DOCUMENTS],
            kb_id=kb_of[doc_ids[(i // per_doc) % DOCUMENTS]],
            text=make_text(rng, words, probs, int(rng.integers(60, 121))),
            source=("wiki", "faq", "manual")[i % 3],
            visibility=("public", "internal")[(i // 7) % 2],
        )
        for i in range(chunks)
    ]
    vectors = rng.standard_normal((chunks, DIMENSION), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return words, probs, doc_ids, kb_of, records, vectors


def run(chunks: int, queries: int, seed: int, pipeline_docs: int) -> str:
    """Build the index, measure, and return the markdown report."""
    rng = np.random.default_rng(seed)
    words, probs, doc_ids, kb_of, records, vectors = make_workload(rng, chunks)

    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        index = EmbeddedIndex(Path(tmp), DIMENSION)
        start = time.perf_counter()
        # ingestion writes one knowledge base at a time (each KB has its own BM25 index)
        order = sorted(range(chunks), key=lambda i: records[i].kb_id)
        for lo in range(0, chunks, BATCH):
            rows = order[lo : lo + BATCH]
            index.upsert([records[i] for i in rows], vectors[rows])
        ingest_s = time.perf_counter() - start
        # Reopening waits for tantivy's background merges (they would otherwise compete with
        # the searches for the CPUs) and measures the cost of a restart.
        index.close()
        start = time.perf_counter()
        index = EmbeddedIndex(Path(tmp), DIMENSION)
        reopen_s = time.perf_counter() - start
        query_texts = [
            make_text(rng, words, probs, int(rng.integers(3, 9))) for _ in range(queries)
        ]
        query_vecs = rng.standard_normal((queries, DIMENSION), dtype=np.float32)
        kb_docs = {kb: [d for d in doc_ids if kb_of[d] == kb] for kb in set(kb_of.values())}

        def filter_for(i: int, kind: str) -> SearchFilter:
            kb = f"kb-{i % KBS}"
            if kind == "kb + scope":
                return SearchFilter(
                    kb_id=kb,
                    sources=frozenset({"wiki", "manual"}),
                    visibilities=frozenset({"public"}),
                )
            if kind == "kb + 50 docs":
                picked = rng.choice(kb_docs[kb], size=min(50, len(kb_docs[kb])), replace=False)
                return SearchFilter(kb_id=kb, document_ids=frozenset(str(d) for d in picked))
            return SearchFilter(kb_id=kb)

        pool = ThreadPoolExecutor(max_workers=2)

        def hybrid(text: str, vec: NDArray[np.float32], flt: SearchFilter) -> list[str]:
            dense = pool.submit(index.search_dense, vec, flt, TOP_K)
            sparse = pool.submit(index.search_sparse, text, flt, TOP_K)
            return fuse(dense.result(), sparse.result(), TOP_K)

        def search(name: str, text: str, vec: NDArray[np.float32], flt: SearchFilter) -> object:
            if name == "dense":
                return index.search_dense(vec, flt, TOP_K)
            if name == "sparse":
                return index.search_sparse(text, flt, TOP_K)
            return hybrid(text, vec, flt)

        lines += [
            f"- chunks: {chunks:,} ({DOCUMENTS:,} documents, {KBS} kbs, dim {DIMENSION}); "
            f"queries: {queries} per cell; top-{TOP_K}",
            f"- ingest (BM25 + dense, batches of {BATCH} chunks of one kb, no embedding): "
            f"{chunks / ingest_s:,.0f} chunks/s ({ingest_s:.1f} s); reopen: {reopen_s:.2f} s",
            "",
            "| filter | dense p50 | dense p95 | sparse p50 | sparse p95 "
            "| hybrid p50 | hybrid p95 |",
            "|---|---|---|---|---|---|---|",
        ]
        for kind in ("kb only", "kb + scope", "kb + 50 docs"):
            cases = [(query_texts[i], query_vecs[i], filter_for(i, kind)) for i in range(queries)]
            for text, vec, flt in cases[:10]:  # warm-up: page cache, filter caches
                hybrid(text, vec, flt)
            cells: list[float] = []
            for name in ("dense", "sparse", "hybrid"):
                samples: list[float] = []
                for text, vec, flt in cases:
                    samples += timed(partial(search, name, text, vec, flt), 1)
                cells += [statistics.median(samples), percentile(samples, 0.95)]
            lines.append(f"| {kind} | " + " | ".join(f"{c:.2f} ms" for c in cells) + " |")
        pool.shutdown()
        lines += service_section(index, Path(tmp), records, query_texts, query_vecs, filter_for)
        index.close()
    lines += ingest_section(rng, words, probs, pipeline_docs)
    header = [
        "## Search latency (embedded index)",
        "",
        f"- date: {dt.date.today().isoformat()}; "
        f"machine: {len(os.sched_getaffinity(0))} CPUs (nproc), "
        f"{cpu_model()}; Python {platform.python_version()}",
    ]
    return "\n".join([*header, *lines, ""])


def service_section(
    index: EmbeddedIndex, tmp: Path, records: list[IndexRecord], texts: list[str],
    vecs: NDArray[np.float32], filter_for: Callable[[int, str], SearchFilter],
) -> list[str]:
    """Hybrid top-30 through RetrievalService: channels, RRF, READY check, hydration."""
    repository = SqlRepository(f"sqlite:///{tmp / 'facts.sqlite'}")
    load_facts(repository, records, KBS)
    lines = ["", "End to end through `RetrievalService.search` (hybrid, top-30; READY re-check "
             "and chunk hydration from SQLite included; query embedding excluded). `retrieval` "
             "= scope, channels, fusion, READY check, top_k; `defaults` adds Small2Big context "
             "and the FAQ plan:", "",
             "| filter | retrieval p50 | retrieval p95 | defaults p50 | defaults p95 |",
             "|---|---|---|---|---|"]
    for kind in ("kb only", "kb + scope", "kb + 50 docs"):
        cases = [(texts[i], vecs[i], filter_for(i, kind)) for i in range(len(texts))]
        cells: list[float] = []
        for retrieval_only in (True, False):
            service_latencies(index, repository, cases[:10], retrieval_only)  # warm-up
            cells += p50_p95(service_latencies(index, repository, cases, retrieval_only))
        lines.append(f"| {kind} | " + " | ".join(f"{c:.2f} ms" for c in cells) + " |")
    repository.close()
    return lines


def ingest_section(
    rng: np.random.Generator, words: list[str], probs: NDArray[np.float64], documents: int
) -> list[str]:
    """Full ingest rate: parse + chunk (real e5 tokenizer) + BM25 + dense + facts."""
    def paragraph() -> str:  # real prose has sentences; 3-10 of 8-24 words each
        count = int(rng.integers(3, 11))
        return " ".join(
            make_text(rng, words, probs, int(rng.integers(8, 25))) + ("。" if i % 2 else ".")
            for i in range(count)
        )

    texts = [markdown_document([paragraph() for _ in range(60)], n) for n in range(documents)]
    # in-process and 2 worker processes, alternated so both see the same load; median of 3
    rates: dict[int, list[float]] = {1: [], 2: []}
    children = 0
    for _ in range(3):
        for workers, samples in rates.items():
            children, seconds = pipeline_ingest_rate(texts, workers=workers)
            samples.append(children / seconds)
    serial, parallel = (statistics.median(rates[w]) for w in (1, 2))
    return ["", f"Full ingest through `IngestionService` ({documents} synthetic markdown "
            f"documents, {children:,} child chunks; parse + chunk with the e5 tokenizer + BM25 + "
            f"dense store + SQLite facts + original stored; embedding replaced by random "
            f"vectors; median of 3 alternated runs): in-process **{serial:,.0f} chunks/s**, "
            f"2 preparation workers **{parallel:,.0f} chunks/s**", ""]


def main() -> None:
    """Parse arguments, run the benchmark, print and optionally save the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pipeline-docs", type=int, default=200,
                        help="synthetic markdown documents pushed through IngestionService")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    report = run(args.chunks, args.queries, args.seed, args.pipeline_docs)
    print(report)
    if args.output is not None:
        args.output.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
