"""Metadata filters and two-KB searches at 100k chunks, side by side in one run (issue 36).

The embedded index holds KB `a` (100k chunks: 10k documents of 10) and KB `b` (20k chunks),
synthetic bilingual texts (search_latency's vocabulary) with vectors given (dense_ann_data:
the structure of real embeddings; no embedder runs). The facts (SQLite) hold every document
with metadata: `dept` (10 values, 10% each), `year` (2015-2024), `shard` (0-99, 1% each) and
`tags` (a list). A search is what RetrievalService runs for it: the filter parsed and matched
on the KB's documents (scope_metadata.FilterRecords: a stamp query per search, the documents
decoded and the answer cached until they change), then dense and BM25 on two threads with
the matched documents as the allow-list, z-score fusion; a two-KB search runs each KB's dense
and BM25 side by side (four threads), merges the channel lists across the KBs
(retrieval/multi_kb.py) and fuses once. Timed per query, p50 and p95 over the same queries,
the cases taking turns, each at a different query (since 2026-12-07; before, each case ran
its block of queries, and a drift of the load between blocks moved ratios by up to 0.2; until
noon that day every case ran the same query in turn, which warmed the caches for the later
ones: `--same-query`).

With `--embed`, every search first embeds its query text with the product's default embedder
(a fresh text each time, so no cache answers), as RetrievalService does once per request
whatever the number of KBs; the vectors searched stay the synthetic ones, so the rankings
are those of the run without it.

Usage: python benchmarks/metadata_filter_scale.py [--chunks 100000] [--queries 100]
       [--dir PATH]  (build there and keep it; a later run with the same --dir reuses it)
       [--embed] [--ids short|uuid]  (document ids d7, or 32-hex as ragsift gives them)
       [--whitelists]  (each filter also by its whitelist alone, beside its metadata terms)
       [--ann-min-rows N]  (rows from which a kb gets its own graph; default: the setting's)
       [--ef-exponents 1.0,1.3]  (each filter at each dense filter ef exponent, side by side)
       [--same-query]  (every case runs the same query at each step, the method before)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from dense_ann import load
from dense_ann_data import expand, queries_near, synthetic_centres
from document_ids import ID_SHAPES, document_id
from search_latency import build_vocabulary

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.sql.repository import SqlRepository
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_filter import parse_filter
from ragsift.domain.metadata_terms import MetadataTerms, document_tokens
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase
from ragsift.domain.results import RankedList
from ragsift.retrieval.fusion import zscore_fusion
from ragsift.retrieval.multi_kb import merge_kb_lists
from ragsift.retrieval.scope_metadata import FilterRecords

K = 30
BATCH = 512
DIMENSION = 384
WEIGHTS = {"dense:original": 1.0, "sparse:original": 0.7}  # the z-score fusion's defaults
DEPTS = ["hr", "it", "finance", "legal", "sales", "ops", "rd", "pr", "qa", "support"]
FILTERS: dict[str, dict[str, Any] | None] = {
    "none (unfiltered)": None,
    "shard = 7 (1%)": {"shard": 7},
    "dept = hr (10%)": {"dept": "hr"},
    "year >= 2020 (50%)": {"year": {"$gte": 2020}},
    "tags $contains (10%)": {"tags": {"$contains": "t3"}},
    "$or of two (19%)": {"$or": [{"dept": "hr"}, {"dept": "it", "year": {"$lt": 2024}}]},
    "$not shard = 7 (99%)": {"$not": {"shard": 7}},
    "$in 3 depts and year range (15%)": {"dept": {"$in": ["hr", "it", "qa"]},
                                          "year": {"$gte": 2015, "$lte": 2019}},
}


def texts(rng: np.random.Generator, rendered: np.ndarray, probs: np.ndarray,
          lengths: list[int]) -> list[str]:
    """search_latency.make_text's texts, drawn for a whole batch at once (one cumulative
    distribution instead of one per text: 100x faster at this vocabulary)."""
    drawn = rendered[rng.choice(len(rendered), size=sum(lengths), p=probs)]
    bounds = np.cumsum([0, *lengths])
    return ["".join(drawn[lo:hi]).strip() for lo, hi in pairwise(bounds)]


def rendered_words(words: list[str]) -> np.ndarray:
    """Chinese words run together, English words separated by spaces (as make_text)."""
    return np.asarray([w if "\u4e00" <= w[0] <= "\u9fff" else f" {w} " for w in words],
                      dtype=object)


def metadata_of(doc: int) -> dict[str, Any]:
    return {"dept": DEPTS[doc % 10], "year": 2015 + (doc // 10) % 10, "shard": (doc // 7) % 100,
            "tags": [f"t{doc % 10}", f"g{doc % 3}"]}


def build(directory: Path, chunks: int, seed: int, ids: str = "short"
          ) -> tuple[EmbeddedIndex, SqlRepository]:
    rng = np.random.default_rng(seed)
    words, probs = build_vocabulary(rng)
    rendered = rendered_words(words)
    centres = synthetic_centres(16_000, rng)
    total = chunks + chunks // 5
    matrix = expand(centres, total, rng)
    np.save(directory / "centres.npy", centres)
    repository = SqlRepository(f"sqlite:///{directory / 'facts.sqlite'}")
    now = datetime.now(UTC)
    for kb in ("a", "b"):
        repository.create_kb(KnowledgeBase(id=kb, name=kb, embedding_model="given",
                                           embedding_dim=DIMENSION, created_at=now))
    started = time.perf_counter()
    # each document's metadata as the index's terms, as ingestion gives them
    tokens = [document_tokens(decode_metadata(metadata_of(d))) for d in range(total // 10 + 1)]
    index = EmbeddedIndex(directory / "index", DIMENSION)
    for lo in range(0, total, BATCH):
        if lo % 20_000 < BATCH:
            print(f"  {lo:,} rows, {time.perf_counter() - started:.0f} s", flush=True)
        rows = range(lo, min(total, lo + BATCH))
        batch = texts(rng, rendered, probs, [int(x) for x in rng.integers(60, 121, len(rows))])
        # a chunk's kb is its document's, as in the facts below (the batch straddling the two
        # kbs once put 35 of b's documents in a's index, which only their facts left out)
        index.upsert([IndexRecord(chunk_id=str(i), document_id=document_id(i // 10, ids),
                                  kb_id="a" if i // 10 * 10 < chunks else "b",
                                  text=text, metadata_tokens=tokens[i // 10])
                      for i, text in zip(rows, batch, strict=True)],
                     matrix[lo: lo + len(rows)])
    index._dense.sync_ann()
    docs = [Document(id=document_id(d, ids), kb_id="a" if d * 10 < chunks else "b",
                     filename=f"d{d}.md",
                     media_type="text/markdown", sha256=None, size=1,
                     status=DocumentStatus.READY, metadata=metadata_of(d))
            for d in range(total // 10)]
    repository.add_documents(docs)
    print(f"build: {total:,} chunks ({chunks:,} in a, {chunks // 5:,} in b), "
          f"{len(docs):,} documents, {time.perf_counter() - started:.0f} s, load {load()}",
          flush=True)
    return index, repository


def probe(index: EmbeddedIndex, repository: SqlRepository, directory: Path, n: int,
          seed: int, embed: Callable[[str], object] | None = None,
          whitelists: bool = False, exponents: tuple[float, ...] = (),
          same_query: bool = False) -> None:
    rng = np.random.default_rng(seed + 1)
    words, probs = build_vocabulary(np.random.default_rng(seed))
    queries = queries_near(np.load(directory / "centres.npy"), n, rng)
    queries_text = texts(rng, rendered_words(words), probs,
                         [int(x) for x in rng.integers(3, 9, n)])
    records = FilterRecords(repository)
    pool = ThreadPoolExecutor(max_workers=4)
    cpu_started = time.process_time()

    def lists(kb: str, i: int, allowed: frozenset[str] | None,
              terms: MetadataTerms | None = None) -> list[RankedList]:
        flt = SearchFilter(kb_id=kb, document_ids=allowed, metadata_terms=terms)
        dense = pool.submit(index.search_dense, queries[i], flt, K)
        sparse = pool.submit(index.search_sparse, queries_text[i], flt, K)
        return [RankedList(name="dense:original", hits=tuple(dense.result())),
                RankedList(name="sparse:original", hits=tuple(sparse.result()))]

    def one_kb(kb: str, spec: dict[str, Any] | None,
               by_terms: bool = True) -> Callable[[int], object]:
        def run(i: int) -> object:
            # the caller's scope as the service compiles it for a request without one; the
            # filter as terms too, as the scope stage sends it (unless `by_terms` is off:
            # the whitelist alone, as before the terms)
            allowed = terms = None
            if spec is not None:
                node = parse_filter(spec)
                if by_terms:  # one read of the KB's stamp for both, as document_stages
                    allowed, terms = records.matching_and_terms(kb, node, SearchFilter(kb_id=kb))
                else:
                    allowed = records.matching(kb, node, SearchFilter(kb_id=kb))
            return zscore_fusion(lists(kb, i, allowed, terms), WEIGHTS)[:K]
        return run

    def two_kbs(i: int) -> object:
        per_kb = [pool.submit(lists, kb, i, None) for kb in ("a", "b")]
        merged = merge_kb_lists([f.result() for f in per_kb], K)
        return zscore_fusion(merged, WEIGHTS)[:K]

    cases: dict[str, Callable[[int], object]] = {
        f"a, filter {name}": one_kb("a", spec) for name, spec in FILTERS.items()}
    if exponents:  # each filter at each ef exponent of its dense graph walk, side by side
        cases = {name: run for name, run in cases.items() if "unfiltered" in name} | {
            f"a, filter {name}, ef exponent {e}": _at_exponent(index, e, one_kb("a", spec))
            for name, spec in FILTERS.items() if spec is not None for e in exponents}
    if whitelists:  # the same filters by their whitelist alone, side by side
        cases.update({f"a, filter {name}, whitelist alone": one_kb("a", spec, False)
                      for name, spec in FILTERS.items() if spec is not None})
    cases["b alone (a fifth of a)"] = one_kb("b", None)
    # issue 39's ratio: the hybrid against its dense channel alone, same queries and KB
    cases["a, dense channel only"] = lambda i: index.search_dense(queries[i], SearchFilter(
        kb_id="a"), K)
    cases["a, BM25 channel only"] = lambda i: index.search_sparse(queries_text[i], SearchFilter(
        kb_id="a"), K)
    cases["a + b (two KBs)"] = two_kbs
    if embed is not None:  # one fresh query embedding per search, then the search
        calls = itertools.count()  # shared: no two searches embed the same text
        cases = {name: _embedding_first(embed, queries_text, calls, run)
                 for name, run in cases.items()}
    results = _interleaved(cases, n, same_query=same_query)
    base = results["a, filter none (unfiltered)"]
    print(f"\n| search | hybrid p50 ms | p95 ms | x unfiltered a | CPU ms/search "
          f"| x unfiltered a (CPU) |  (load {load()}, "
          f"{time.process_time() - cpu_started:.0f} CPU s)")
    print("|---|---|---|---|---|---|")
    for name, (p50, p95, cpu_ms) in results.items():
        print(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / base[0]:.2f} | {cpu_ms:.2f} "
              f"| {cpu_ms / base[2]:.2f} |")
    pool.shutdown()


def _interleaved(cases: dict[str, Callable[[int], object]], n: int,
                 rounds: int = 2, same_query: bool = False
                 ) -> dict[str, tuple[float, float, float]]:
    """p50 and p95 wall ms and mean CPU ms (every thread of the process) of each case,
    the cases taking turns (the order rotating per step): a drift of the machine's load,
    which moved whole blocks of one case by 20 % between runs, hits every case alike.

    At each step every case runs a different query: case k the query k x n / cases further
    on, so every case runs every query once a round, never just after another case ran it.
    (`same_query`: every case the step's query, as before 2026-12-07 noon: the later cases
    then walked the graph nodes and postings the first had just brought into the caches,
    which hid most of the cost of a longer graph walk.)"""
    for run in cases.values():
        for i in range(min(5, n)):
            run(i)  # warm-up: page cache, filter cache
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu_s = dict.fromkeys(names, 0.0)
    offsets = {name: 0 if same_query else k * n // len(names) for k, name in enumerate(names)}
    for round_ in range(rounds):
        for i in range(n):
            shift = (i + round_) % len(names)
            for name in names[shift:] + names[:shift]:
                started, cpu = time.perf_counter(), time.process_time()
                cases[name]((i + offsets[name]) % n)
                times[name].append(time.perf_counter() - started)
                cpu_s[name] += time.process_time() - cpu
    return {name: (statistics.median(times[name]) * 1e3,
                   float(np.quantile(times[name], 0.95)) * 1e3,
                   cpu_s[name] / len(times[name]) * 1e3) for name in names}


def _at_exponent(index: EmbeddedIndex, exponent: float,
                 run: Callable[[int], object]) -> Callable[[int], object]:
    ann = index._dense._ann  # the benchmark's lever

    def at_exponent(i: int) -> object:
        ann.settings = dataclasses.replace(ann.settings, filter_ef_exponent=exponent)
        return run(i)
    return at_exponent


def _embedding_first(embed: Callable[[str], object], queries_text: list[str],
                     calls: Iterator[int], run: Callable[[int], object]
                     ) -> Callable[[int], object]:
    def embedded(i: int) -> object:
        # never the same text twice, and the same length in every case
        embed(f"{queries_text[i]} {next(calls):06d}")
        return run(i)
    return embedded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--dir", type=Path, default=None,
                        help="build here and keep it; reused when it holds a finished build")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--ids", choices=ID_SHAPES, default="short",
                        help="document ids: d7, or 32-hex as ragsift gives them")
    parser.add_argument("--ann-min-rows", type=int, default=None,
                        help="rows from which a kb gets its graph (default: the setting's)")
    parser.add_argument("--whitelists", action="store_true",
                        help="also each filter by its whitelist alone (no metadata terms)")
    parser.add_argument("--ef-exponents", default="",
                        help="comma-separated: each filter at each dense filter ef exponent")
    parser.add_argument("--embed", action="store_true",
                        help="embed each search's query first (the default embedder)")
    parser.add_argument("--same-query", action="store_true",
                        help="every case runs the step's query (the method before "
                             "2026-12-07 noon), not a query of its own")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load {load()}, {time.strftime('%Y-%m-%d %H:%M')}",
          flush=True)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        run(args.dir, args)
        return
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        run(Path(tmp), args)


def run(directory: Path, args: argparse.Namespace) -> None:
    """Build into `directory` (unless a finished build of the same size is there), probe."""
    suffix = "" if args.ids == "short" else f"-{args.ids}"
    done = directory / f"built-{args.chunks}-{args.seed}{suffix}"
    ann = None if args.ann_min_rows is None else AnnSettings(min_rows=args.ann_min_rows)
    if done.exists():
        index = EmbeddedIndex(directory / "index", DIMENSION, ann=ann)
        index._dense.sync_ann()  # every kb's graph built before timing
        repository = SqlRepository(f"sqlite:///{directory / 'facts.sqlite'}")
        print(f"reusing the build in {directory}", flush=True)
    else:
        index, repository = build(directory, args.chunks, args.seed, args.ids)
        done.touch()
    try:
        if args.build_only:
            return
        if not args.embed:
            probe(index, repository, directory, args.queries, args.seed,
                  whitelists=args.whitelists, exponents=tuple(
                      float(e) for e in args.ef_exponents.split(",") if e),
                  same_query=args.same_query)
            return
        from ragsift.bootstrap import build as build_container
        from ragsift.config import Settings

        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
            container = build_container(Settings(data_dir=Path(tmp)))
            try:
                probe(index, repository, directory, args.queries, args.seed,
                      container.embedder.embed_query, same_query=args.same_query)
            finally:
                container.close()
    finally:
        index.close()
        repository.close()


if __name__ == "__main__":
    main()
