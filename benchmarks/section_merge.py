"""Auto-merge into sections (L1) against merging into parents only (L2) and no merge, over the
bundled samples (issue 35, item 6).

Builds KB "samples" from samples/ into DATA_DIR on first use (OCR included; the chunker writes
sections), then searches every turn of tests/evaluation/data/conversations.jsonl as its
standalone question (the set's own rewrite; first turns as asked) three ways: `off` (no
auto-merge), `L2` (children into parents, threshold 2), `L2+L1` (and parents into sections,
threshold 2). Reports recall@1 and @3 per document (first distinct files of the hits), the
reciprocal rank of the first relevant file, the characters of the first 3 hits (the context an
answer reads) and the sections merged per question, with paired-bootstrap intervals against `off`.

Usage: python benchmarks/section_merge.py [--data-dir /tmp/section-merge]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from ragsift import bootstrap
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.evaluation.bootstrap_ci import paired_bootstrap
from ragsift.evaluation.conversations import load_conversations
from ragsift.retrieval.service import RetrievalService

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {"off": None, "L2": 0, "L2+L1": 2}  # name -> section threshold (None: no merge)


def _kb(container: bootstrap.Container) -> str:
    kb = container.repository.get_kb_by_name("samples")
    if kb is not None:
        return kb.id
    kb = container.ingestion.ensure_kb("samples")
    for path in sorted((ROOT / "samples").iterdir()):
        outcome = container.ingestion.ingest_path(kb, path)
        print(f"ingested {path.name}: {outcome.document.status}", file=sys.stderr)
    return kb.id


def _scores(service: RetrievalService, kb_id: str, questions: list[tuple[str, frozenset[str]]],
            merge: bool) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"R@1": [], "R@3": [], "MRR": [], "chars@3": [],
                                   "sections merged": []}

    async def run() -> None:
        for query, relevant in questions:
            result = await service.search(SearchRequest(
                query=query, kb_id=kb_id, top_k=20, run_faq=False, small2big=False,
                rerank=False, rewrite=False, auto_merge=merge))
            files = list(dict.fromkeys(hit.filename for hit in result.hits))
            for k in (1, 3):
                out[f"R@{k}"].append(len(relevant & set(files[:k])) / len(relevant))
            rank = next((i for i, f in enumerate(files, 1) if f in relevant), None)
            out["MRR"].append(0.0 if rank is None else 1 / rank)
            out["chars@3"].append(float(sum(len(hit.text) for hit in result.hits[:3])))
            detail = result.trace.auto_merge.detail
            out["sections merged"].append(float(detail.get("merged_sections", 0)))

    asyncio.run(run())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/section-merge"))
    args = parser.parse_args()
    questions = [(turn.standalone or turn.query, turn.relevant)
                 for conversation in load_conversations(
                     ROOT / "tests/evaluation/data/conversations.jsonl")
                 for turn in conversation.turns]
    base = Settings(data_dir=args.data_dir, rewrite=False, query_cache_size=0)
    container = bootstrap.build(base)
    try:
        kb_id = _kb(container)
        runs = {}
        for name, section in CONFIGS.items():
            settings = base.model_copy(update={"auto_merge_section_threshold": section or 0})
            service = RetrievalService(container.repository, container.index,
                                       container.embedder, settings)
            runs[name] = _scores(service, kb_id, questions, section is not None)
    finally:
        container.close()
    print(f"{len(questions)} questions; load average {os.getloadavg()[0]:.1f}\n")
    print("| metric | off | L2 | L2+L1 | L2 - off [95% CI] | L2+L1 - L2 [95% CI] |")
    print("|---|---|---|---|---|---|")
    for metric in runs["off"]:
        means = [sum(runs[c][metric]) / len(questions) for c in CONFIGS]
        l2 = paired_bootstrap(runs["off"][metric], runs["L2"][metric])
        l1 = paired_bootstrap(runs["L2"][metric], runs["L2+L1"][metric])
        print(f"| {metric} | " + " | ".join(f"{m:.3f}" for m in means)
              + f" | {l2.label()} | {l1.label()} |")


if __name__ == "__main__":
    main()
