"""The answer without a chat model: best evidence sentences with citation links, and a note."""

from __future__ import annotations

from chat.chat_factories import FIRMWARE, HOTEL, LEAVE, evidence
from ragsift.chat.citations import validate_citations
from ragsift.chat.extractive import (
    EXTRACTIVE_NOTE_EN,
    EXTRACTIVE_NOTE_ZH,
    extractive_answer,
    sentences,
    terms,
)
from ragsift.chat.prompt import NO_EVIDENCE_EN, NO_EVIDENCE_ZH


def test_sentences_split_on_chinese_and_english_ends_but_not_inside_versions() -> None:
    assert sentences(LEAVE) == [
        "员工每年享有十五天带薪年假。", "未休完的年假最多可结转五天到下一年。",
    ]
    assert sentences(FIRMWARE + " Update now!\nThanks") == [
        "Firmware v2.4.1 fixes error E-104 when Wi-Fi authentication fails.", "Update now!",
        "Thanks",
    ]


def test_terms_are_words_without_stopwords_and_chinese_bigrams() -> None:
    assert terms("What is the hotel limit in Tokyo?") == {"hotel", "limit", "tokyo"}
    assert terms("年假结转") == {"年假", "假结", "结转"}
    assert terms("E-104 错") == {"e-104", "错"}


def test_english_answer_quotes_the_best_sentence_of_each_matching_item_with_its_link() -> None:
    items = [evidence(1, HOTEL), evidence(2, FIRMWARE, "firmware.txt")]
    answer = extractive_answer("What is the hotel limit in Tokyo?", items)
    assert answer == (
        f"{EXTRACTIVE_NOTE_EN}\n\n"
        "- In London and Tokyo the hotel limit per night rises to 220 dollars. "
        "[Source 1](citation://1)"
    )
    assert [c.n for c in validate_citations(answer, items).citations] == [1]


def test_chinese_question_gets_the_chinese_note_and_several_items_in_evidence_order() -> None:
    items = [
        evidence(1, LEAVE, "leave.md"), evidence(2, HOTEL), evidence(3, "年假须提前一周申请。"),
    ]
    answer = extractive_answer("年假可以结转几天？", items)
    assert answer == (
        f"{EXTRACTIVE_NOTE_ZH}\n\n"
        "- 未休完的年假最多可结转五天到下一年。 [来源 1](citation://1)\n"
        "- 年假须提前一周申请。 [来源 3](citation://3)"
    )


def test_at_most_max_sentences_items_are_quoted() -> None:
    items = [evidence(n, f"The hotel limit is {n}00 dollars.") for n in range(1, 6)]
    answer = extractive_answer("hotel limit", items, max_sentences=2)
    assert answer.count("citation://") == 2 and "[Source 2](citation://2)" in answer


def test_without_shared_terms_the_first_sentence_of_the_top_item_is_quoted() -> None:
    answer = extractive_answer("Wie hoch ist das Limit?", [evidence(1, HOTEL)])
    assert answer == (f"{EXTRACTIVE_NOTE_EN}\n\n- The hotel limit per night is 150 dollars in "
                      "most cities. [Source 1](citation://1)")


def test_long_sentences_are_shortened_and_no_evidence_says_so() -> None:
    answer = extractive_answer("hotel", [evidence(1, "hotel " * 100)])
    line = answer.splitlines()[-1]
    assert line.endswith("… [Source 1](citation://1)") and len(line) < 330
    assert extractive_answer("hotel?", []) == NO_EVIDENCE_EN
    assert extractive_answer("年假？", []) == NO_EVIDENCE_ZH


TABLE = (
    "| 城市类别 | 代表城市 | 职级 | 住宿上限（元/晚） |\n| --- | --- | --- | --- |\n"
    "| 一线城市 | 北京、上海 | 普通员工 | 600 |\n| 一线城市 | 北京、上海 | 经理及以上 | 900 |\n"
    "| 其他城市 | 地级市 | 普通员工 | 300 |\n| 说明 | 超出部分由个人承担 |  |  |"
)


def test_a_table_hit_is_quoted_as_its_matching_rows_under_its_header() -> None:
    answer = extractive_answer("北京的住宿上限每晚多少", [evidence(1, TABLE, "price.xlsx")])

    assert answer == (
        f"{EXTRACTIVE_NOTE_ZH}\n\n"
        "| 城市类别 | 代表城市 | 职级 | 住宿上限（元/晚） |\n| --- | --- | --- | --- |\n"
        "| 一线城市 | 北京、上海 | 普通员工 | 600 |\n"
        "| 一线城市 | 北京、上海 | 经理及以上 | 900 |\n\n"
        "[来源 1](citation://1)"
    )


def test_a_dash_list_item_is_quoted_as_one_bullet_never_a_doubled_marker() -> None:
    text = "- 年假：员工每年享有十五天带薪年假。\n- 病假：须提供医院证明。"
    answer = extractive_answer("年假有几天", [evidence(1, text)])

    assert answer.endswith("\n\n- 年假：员工每年享有十五天带薪年假。 [来源 1](citation://1)")
    assert "- - " not in answer
