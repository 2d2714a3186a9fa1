"""Markdown parsing: nested heading paths, lists, tables, code and Chinese text."""

from __future__ import annotations

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document

HANDBOOK = """\
# 员工手册

本手册适用于全体员工。

## 考勤

### 工作时间

标准上班时间为 9:00—18:00，
午休 12:00—13:00。

### 迟到

- 迟到 15 分钟以内：记录一次
- 迟到超过 **30 分钟**：按[事假](leave.md)处理
  1. 第一次：口头提醒
  2. 第二次：书面警告

## 年假

| 工龄 | 年假 |
| --- | --- |
| 满 1 年不满 10 年 | 5 天 |
| 满 20 年 | 15 天 |

# Appendix

```bash
curl -s https://hr.example/api
```
"""


def parse(text: str) -> ParsedDocument:
    return parse_document("handbook.md", text.encode("utf-8"))


def test_headings_become_nested_heading_paths() -> None:
    paths = [section.heading_path for section in parse(HANDBOOK).sections]
    assert paths == [
        ("员工手册",),
        ("员工手册", "考勤", "工作时间"),
        ("员工手册", "考勤", "迟到"),
        ("员工手册", "年假"),
        ("Appendix",),
    ]


def test_heading_without_body_yields_no_section_but_stays_in_child_paths() -> None:
    sections = parse(HANDBOOK).sections
    assert ("员工手册", "考勤") not in [section.heading_path for section in sections]
    assert sections[1].heading_path[:2] == ("员工手册", "考勤")


def test_chinese_text_survives_and_soft_breaks_between_cjk_vanish() -> None:
    section = parse(HANDBOOK).sections[1]
    assert section.text == "标准上班时间为 9:00—18:00，午休 12:00—13:00。"
    assert section.locator == Locator()


def test_soft_break_between_latin_words_becomes_a_space() -> None:
    parsed = parse("# Intro\n\nThe thermostat\nneeds a C wire.\\\nHard break kept.")
    assert parsed.sections[0].text == "The thermostat needs a C wire.\nHard break kept."


def test_list_is_one_block_with_an_item_per_line_and_inline_markup_dropped() -> None:
    section = parse(HANDBOOK).sections[2]
    assert section.text == (
        "- 迟到 15 分钟以内：记录一次\n"
        "- 迟到超过 30 分钟：按事假处理\n"
        "1. 第一次：口头提醒\n"
        "2. 第二次：书面警告"
    )


def test_table_rows_are_rendered_with_pipe_separated_cells() -> None:
    section = parse(HANDBOOK).sections[3]
    assert section.text == "工龄 | 年假\n满 1 年不满 10 年 | 5 天\n满 20 年 | 15 天"


def test_fenced_code_is_kept_as_text() -> None:
    assert parse(HANDBOOK).sections[4].text == "curl -s https://hr.example/api"


def test_paragraphs_are_separated_by_blank_lines() -> None:
    parsed = parse("# T\n\nfirst paragraph\n\nsecond paragraph\n")
    assert parsed.sections[0].text == "first paragraph\n\nsecond paragraph"


def test_text_before_the_first_heading_has_an_empty_path() -> None:
    parsed = parse("Preface text.\n\n# Chapter\n\nBody.")
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        ((), "Preface text."),
        (("Chapter",), "Body."),
    ]


def test_skipped_heading_levels_and_going_back_up_nest_correctly() -> None:
    parsed = parse("# A\n\n### A.x\n\none\n\n## B\n\ntwo\n\n# C\n\nthree")
    assert [s.heading_path for s in parsed.sections] == [("A", "A.x"), ("A", "B"), ("C",)]


def test_setext_headings_and_yaml_front_matter() -> None:
    parsed = parse("---\ntitle: Guide\nlang: zh\n---\nGuide\n=====\n\nSetup\n-----\n\nStep one.")
    sections = [(s.heading_path, s.text) for s in parsed.sections]
    assert sections == [(("Guide", "Setup"), "Step one.")]


def test_image_alt_text_and_inline_code_are_kept() -> None:
    parsed = parse("# Wiring\n\nSee ![wiring diagram](w.png) and set `MODE=eco`.")
    assert parsed.sections[0].text == "See wiring diagram and set MODE=eco."


def test_more_non_blank_lines_than_the_block_limit_are_rejected_before_parsing() -> None:
    text = "- item\n\n" * 6
    assert parse_document("a.md", text.encode(), ParseLimits(max_document_blocks=6)).sections
    with pytest.raises(
        DocumentRejected,
        match=r"Markdown has 6 non-blank lines, over the limit of 5 "
        r"\(RAGSIFT_MAX_DOCUMENT_BLOCKS\)",
    ):
        parse_document("a.md", text.encode(), ParseLimits(max_document_blocks=5))


def test_html_blocks_count_against_the_html_element_limit() -> None:
    text = "# Title\n\n<div><p>one</p><p>two</p></div>\n\ntext\n\n<div>three</div>\n"
    assert parse_document("a.md", text.encode(), ParseLimits(max_html_elements=4)).sections
    with pytest.raises(DocumentRejected, match=r"HTML has more than 3 elements"):
        parse_document("a.md", text.encode(), ParseLimits(max_html_elements=3))
