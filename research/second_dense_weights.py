"""Where the answer ranks (top 10, RetrievalService, no rewriter) for English questions over a
mostly Chinese KB, at several fusion weights of the second dense channel (issue 18, item 6).

    python research/second_dense_weights.py DATA_DIR KB [--weights 1,1.5,2,3]

Questions of two kinds, our own (no labelled cross-lingual set exists): the answer is in
English (same language: the channel must not push it down) or in Chinese (cross-lingual: the
channel must bring it up). Both kinds are "cross-lingual" queries to the service, since the
KB is mostly Chinese, so both search the second dense channel at the weight tried.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.retrieval.service import RetrievalService

SAME = (  # (question, a phrase of the chunk that answers it)
    ("What does error code E-104 mean?", "E-104"),
    ("How do I reset the VPN password?", "VPN"),
    ("hotel limit per night for business travel", "maximum nightly rates"),
    ("Which cabin class may I book on flights over 10 hours?", "10 hours"),
    ("firmware 2.4.1 fixes", "2.4.1"),
    ("What is the per diem for meals?", "meal"),
    ("guest wifi password", "XH-Guest"),
)
CROSS = (
    ("How many days of paid annual leave do I get after one year of service?", "享受带薪年休假"),
    ("How many days of paid annual leave after one year of service?", "享受带薪年休假"),
    ("How often must I change my password?", "90 天"),
    ("What happens after 5 wrong password attempts?", "锁定 30 分钟"),
    ("What is the hotel limit per night in first-tier cities?", "一线城市"),
    ("How many days of sick leave are paid?", "病假"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("kb")
    parser.add_argument("--weights", default="1,1.5,2,3")
    args = parser.parse_args()
    container = build(Settings(data_dir=args.data_dir))
    try:
        kb = container.repository.get_kb_by_name(args.kb)
        if kb is None:
            raise SystemExit(f"no knowledge base {args.kb!r} in {args.data_dir}")
        print("| weight | same language (7) | cross-lingual (6) |\n|---|---|---|")
        for weight in (float(w) for w in args.weights.split(",")):
            service = RetrievalService(
                container.repository, container.index, container.embedder,
                container.settings.model_copy(update={"second_dense_weight": weight}))
            ranks = []
            for question, fact in (*SAME, *CROSS):
                request = SearchRequest(query=question, kb_id=kb.id, top_k=10, rewrite=False,
                                        rerank=False, small2big=False, run_faq=False)
                hits = asyncio.run(service.search(request)).hits
                ranks.append(next((i for i, h in enumerate(hits, 1) if fact in h.text), None))
            shown = ["-" if r is None else str(r) for r in ranks]
            print(f"| {weight:g} | {', '.join(shown[:len(SAME)])} | "
                  f"{', '.join(shown[len(SAME):])} |")
    finally:
        container.close()


if __name__ == "__main__":
    main()
