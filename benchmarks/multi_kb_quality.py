"""Does searching two KBs at once keep each KB's answers where a one-KB search puts them?

Two small KBs of similar content (an office handbook and its annex: travel, leave, IT,
expenses in both, with different facts), each question's answer in one document of one KB.
Per question, the rank of the first chunk of the answer's document in: the search of its own
KB alone, the two-KB search (the product: BM25 lists merged by raw score), and the two-KB
search with BM25 lists z-normalised per KB before the merge (the alternative). Real parts:
bootstrap.build (e5, tantivy, SQLite) on a temporary data dir; rerank and rewrite off.

Usage: python benchmarks/multi_kb_quality.py
"""

from __future__ import annotations

import asyncio
import functools
import os
import tempfile
import time
from pathlib import Path
from unittest import mock

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.retrieval import service as service_module
from ragsift.retrieval.multi_kb import merge_kb_lists

OFFICE = {
    "travel.md": "# Travel policy\n\nHotel rooms are booked through the travel desk. The hotel "
    "limit is 150 dollars per night, 220 dollars in London and Tokyo. Economy class is used "
    "for flights under six hours; business class above that with a director's approval.",
    "leave.md": "# Annual leave\n\nEvery employee has fifteen days of annual leave per year. "
    "Up to five unused days carry over to the next year and expire at the end of March. "
    "Requests go to the line manager two weeks ahead.",
    "it.md": "# IT security\n\nPasswords have at least 14 characters and are changed every "
    "180 days. Lost laptops are reported to the service desk within one hour. USB storage "
    "devices are blocked on company laptops.",
    "expenses.md": "# 报销制度\n\n差旅费用须在出差结束后 30 天内提交报销申请。"
    "餐费每天最多报销 60 元。报销时须附上发票原件。财务部门在十个工作日内完成审核。",
}
ANNEX = {
    "contractors.md": "# Contractor travel\n\nContractors book their own travel and invoice it "
    "monthly. Their hotel limit is 120 dollars per night in every city. Contractors never fly "
    "business class.",
    "parental.md": "# Parental leave\n\nParents get sixteen weeks of paid parental leave, "
    "taken within the child's first year. Leave of up to four weeks can be split into "
    "two parts.",
    "devices.md": "# Personal devices\n\nPersonal phones may read company mail after the "
    "device management app is installed. A wiped personal phone is not replaced by the company.",
    "canteen.md": "# 食堂\n\n员工食堂午餐补贴每餐 15 元，早餐七点开始供应。"
    "访客用餐须提前一天登记。",
}
QUESTIONS = [  # (question, KB, document holding the answer)
    ("What is the hotel limit per night in Tokyo?", "office", "travel.md"),
    ("How many unused leave days carry over?", "office", "leave.md"),
    ("How long must a password be?", "office", "it.md"),
    ("Who do I tell when my laptop is lost?", "office", "it.md"),
    ("报销申请要在多少天内提交？", "office", "expenses.md"),
    ("When is business class allowed?", "office", "travel.md"),
    ("What is the hotel limit for contractors?", "annex", "contractors.md"),
    ("How many weeks of parental leave do parents get?", "annex", "parental.md"),
    ("Can I read company mail on my own phone?", "annex", "devices.md"),
    ("食堂午餐补贴多少钱？", "annex", "canteen.md"),
    ("Do contractors fly business class?", "annex", "contractors.md"),
    ("Can parental leave be split?", "annex", "parental.md"),
]


def rank_of(hits: list[tuple[str, str]], kb_id: str, filename: str) -> int | None:
    for rank, (hit_kb, hit_file) in enumerate(hits, start=1):
        if hit_kb == kb_id and hit_file == filename:
            return rank
    return None


def main() -> None:
    print(f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        container = build(Settings(data_dir=root / "data", rerank=False, rewrite=False))
        ids = {}
        for name, docs in (("office", OFFICE), ("annex", ANNEX)):
            kb = container.ingestion.ensure_kb(name)
            ids[name] = kb.id
            for filename, text in docs.items():
                (root / filename).write_text(text, encoding="utf-8")
                container.ingestion.ingest_path(kb, root / filename)

        def search(query: str, kbs: list[str]) -> list[tuple[str, str]]:
            request = SearchRequest(query=query, kb_id=ids[kbs[0]], top_k=10, small2big=False,
                                    kb_ids=tuple(ids[k] for k in kbs) if len(kbs) > 1 else None)
            result = asyncio.run(container.retrieval.search(request))
            return [(hit.kb_id or "", hit.filename) for hit in result.hits]

        rows: dict[str, list[int | None]] = {"one KB": [], "two KBs, raw BM25": [],
                                             "two KBs, z-scored BM25": []}
        for question, kb, filename in QUESTIONS:
            rows["one KB"].append(rank_of(search(question, [kb]), ids[kb], filename))
            rows["two KBs, raw BM25"].append(
                rank_of(search(question, ["office", "annex"]), ids[kb], filename))
            zscored = functools.partial(merge_kb_lists, sparse="zscore")
            with mock.patch.object(service_module, "merge_kb_lists", zscored):
                rows["two KBs, z-scored BM25"].append(
                    rank_of(search(question, ["office", "annex"]), ids[kb], filename))
        container.close()
    print(f"\n{len(QUESTIONS)} questions, rank of the answer's document (top 10; - = absent)\n")
    print("| search | hits@1 | MRR@10 | ranks |\n|---|---|---|---|")
    for name, ranks in rows.items():
        at1 = sum(1 for r in ranks if r == 1) / len(ranks)
        mrr = sum(1 / r for r in ranks if r) / len(ranks)
        shown = " ".join("-" if r is None else str(r) for r in ranks)
        print(f"| {name} | {at1:.3f} | {mrr:.3f} | {shown} |")


if __name__ == "__main__":
    main()
