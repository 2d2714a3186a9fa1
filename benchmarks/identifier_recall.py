"""Recall@1 of identifier queries (issue 34): codes, numbers and names, in zh and en, each with
exactly one relevant document among many of the same shape (tests/support/identifier_set.py).

Usage: python benchmarks/identifier_recall.py --data-dir DIR [--documents 360] [--queries 90]
       [--seed 34] [--json FILE]
Builds the KB `identifiers` in DIR with the real pipeline (e5, tantivy, SQLite) on first use
and reuses it; settings come from the environment (RAGSIFT_*), so a before/after comparison
is two runs with different settings or code. Prints recall@1 and MRR@10 per mode and per
family for the default hybrid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from support.identifier_set import IdDocument, IdQuery, generate

# (label, mode, fusion): fusion None is the settings' default (zscore unless RAGSIFT_FUSION)
MODES = (("hybrid-default", "hybrid", None), ("hybrid-rrf", "hybrid", "rrf"),
         ("hybrid-weighted", "hybrid", "weighted"), ("hybrid-zscore", "hybrid", "zscore"),
         ("dense", "dense", None), ("sparse", "sparse", None))


def ingest(container: Container, docs: list[IdDocument], kb_name: str) -> KnowledgeBase:
    """The KB holding `docs` (each READY); documents already there are kept."""
    kb = container.ingestion.ensure_kb(kb_name)
    have = {d.filename for d in container.repository.list_documents(kb.id, DocumentStatus.READY)}
    for doc in docs:
        if doc.name not in have:
            outcome = container.ingestion.ingest_bytes(kb, doc.name, doc.text.encode("utf-8"))
            if outcome.document.error is not None:
                raise SystemExit(f"{doc.name}: {outcome.document.error}")
    return kb


async def ranks(container: Container, kb: KnowledgeBase, queries: list[IdQuery],
                mode: str, fusion: str | None) -> tuple[dict[str, int | None], list[float]]:
    """(query id -> the rank (1-based) of its relevant document in the top 10 or None, the
    document search's milliseconds per query, the embedding of the query included)."""
    by_id = {d.id: d.filename for d in container.repository.list_documents(kb.id)}
    found: dict[str, int | None] = {}
    fusion_ms: list[float] = []
    for query in queries:
        result = await container.retrieval.search(SearchRequest(
            query=query.text, kb_id=kb.id, mode=mode, fusion=fusion, top_k=10))  # type: ignore[arg-type]
        names = list(dict.fromkeys(by_id.get(hit.document_id, "") for hit in result.hits))
        found[query.id] = names.index(query.relevant) + 1 if query.relevant in names else None
        fusion_ms.append(result.trace.timings_ms.get("total", 0.0))
    return found, fusion_ms


def summary(found: dict[str, int | None]) -> dict[str, float]:
    n = len(found)
    return {"recall@1": sum(r == 1 for r in found.values()) / n,
            "mrr@10": sum(1 / r for r in found.values() if r) / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=360)
    parser.add_argument("--queries", type=int, default=90)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--modes", nargs="*", default=[label for label, _, _ in MODES])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    docs, queries = generate(args.documents, args.queries, args.seed)
    container = build(Settings(data_dir=args.data_dir, query_cache_size=0))
    try:
        kb = ingest(container, docs, f"identifiers-v3-{args.documents}-{args.seed}")
        report: dict[str, object] = {"documents": len(docs), "queries": len(queries)}
        for label, mode, fusion in MODES:
            if label not in args.modes:
                continue
            found, fusion_ms = asyncio.run(ranks(container, kb, queries, mode, fusion))
            report[label] = {**summary(found),
                             "search_ms_p50": statistics.median(fusion_ms)}
            families: dict[str, dict[str, int | None]] = defaultdict(dict)
            for query in queries:
                families[f"{query.family}/{query.lang}"][query.id] = found[query.id]
            report[f"{label}:families"] = {
                name: round(summary(part)["recall@1"], 3)
                for name, part in sorted(families.items())}
            misses = [f"{q.text} -> {found[q.id]}" for q in queries if found[q.id] != 1]
            print(f"{label}: recall@1 {report[label]['recall@1']:.3f}, "  # type: ignore[index]
                  f"MRR@10 {report[label]['mrr@10']:.3f}, search p50 "  # type: ignore[index]
                  f"{report[label]['search_ms_p50']:.1f} ms; misses: {misses[:12]}")
    finally:
        container.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False), "utf-8")


if __name__ == "__main__":
    main()
