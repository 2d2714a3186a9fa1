"""Mixed-KB probe (issue 34, item 6): recall@3 of the bilingual set when the second dense
channel (USE) is fused in, with its whole list or with only the chunks in the other language
than the query's, at several weights - offline, from the channels' lists.

    python research/mixed_kb_probe.py [--data-dir /tmp/levers/bilingual/data]

Ingests benchmarks/data/bilingual/ into a KB of its own data dir once; per question, takes
e5, BM25 and USE's top 100 (ChannelRunner, as the service searches) and z-score fuses them
(dense 1, BM25 0.7, USE w) as `ragsift.retrieval.fusion` does; prints recall@3 by direction.
The service's own numbers: benchmarks/bilingual_recall.py.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bilingual_recall import DIRECTIONS, ingest, questions

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import CHILD_LEVEL
from ragsift.domain.results import ChannelHit, FusedHit, RankedList
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.cross_lingual import cjk_share, language_of
from ragsift.retrieval.fusion import fuse

WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/levers/bilingual/data"))
    args = parser.parse_args()
    container = build(Settings(data_dir=args.data_dir))
    kb_id = ingest(container)
    filename = {d.id: d.filename for d in container.repository.list_documents(kb_id)}
    chunks = [c for d in filename for c in container.repository.list_chunks(d)
              if c.level == CHILD_LEVEL]
    text = {c.id: c.text for c in chunks}
    document = {c.id: filename[c.document_id] for c in chunks}
    language = {c.id: language_of(cjk_share(c.text) or 0.0) for c in chunks}
    runner = ChannelRunner(container.index, container.embedder)
    found: dict[str, list[bool]] = {}
    items = questions()
    for item in items:
        where = SearchFilter(kb_id=kb_id)
        outcome = asyncio.run(runner.run([("original", item.query)], where, "hybrid", 100))
        second = asyncio.run(runner.run_second_dense("original", item.query, where, 100))
        lists = {ranked.name.split(":")[0]: ranked for ranked in outcome.lists + second.lists}
        other = [h for h in lists["second_dense"].hits
                 if language[h.chunk_id] != language_of(cjk_share(item.query) or 0.0)]
        variants = {"whole list": lists["second_dense"],
                    "other language only": RankedList(name="second_dense:o", hits=tuple(other))}

        def top3(hits: tuple[ChannelHit, ...] | list[FusedHit], fact: str = item.fact,
                 doc: str = item.document) -> bool:
            return any(document[h.chunk_id] == doc and fact in text[h.chunk_id]
                       for h in hits[:3])

        for kind, use in variants.items():
            for weight in WEIGHTS:
                live = [lists["dense"], lists["sparse"]] + ([use] if weight else [])
                fused = fuse("zscore", live, weights={"dense": 1.0, "sparse": 0.7,
                                                      "second_dense": weight})
                found.setdefault(f"{kind}, {weight}", []).append(top3(fused))
        found.setdefault("USE alone", []).append(top3(lists["second_dense"].hits))
    print("| USE list, weight | " + " | ".join(DIRECTIONS) + " |")
    print("|---" * (len(DIRECTIONS) + 1) + "|")
    for name, hits in found.items():
        cells = [statistics.fmean(h for h, q in zip(hits, items, strict=True)
                                  if q.direction == d) for d in DIRECTIONS]
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    container.close()


if __name__ == "__main__":
    main()
