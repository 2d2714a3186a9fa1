"""JSON and JSONL parsing: records as sections of `key: value` lines, pointers and limits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from ragsift.ingestion.parsers.jsonrecords import (
    JSONL_MEDIA_TYPE,
    MEDIA_TYPE,
    json_pointer,
    parse_json,
    record_lines,
)


def parse(value: Any, limits: ParseLimits | None = None) -> ParsedDocument:
    return parse_document("records.json", json.dumps(value, ensure_ascii=False).encode(), limits)


def jsonl(lines: list[str]) -> bytes:
    return "\n".join(lines).encode()


def test_each_element_of_a_top_level_array_is_a_record_section() -> None:
    parsed = parse([
        {"question": "如何重置密码？", "answer": "在登录页点击“忘记密码”。"},
        {"title": "VPN", "body": "Use the company VPN abroad."},
        {"id": 3, "text": "no heading here"},
    ])
    assert parsed.media_type == MEDIA_TYPE
    assert [section.heading_path for section in parsed.sections] == [
        ("如何重置密码？",), ("VPN",), (),
    ]
    assert parsed.sections[0].text == "question: 如何重置密码？\nanswer: 在登录页点击“忘记密码”。"
    assert [section.locator for section in parsed.sections] == [
        Locator(record=0, pointer="/0"),
        Locator(record=1, pointer="/1"),
        Locator(record=2, pointer="/2"),
    ]


def test_the_title_is_preferred_over_name_and_question_in_any_case() -> None:
    parsed = parse([{"Question": "Q?", "Name": "N", "TITLE": "T"}, {"name": "", "question": "Q"}])
    assert [section.heading_path for section in parsed.sections] == [("T",), ("Q",)]


def test_the_one_array_of_objects_in_an_object_holds_the_records() -> None:
    parsed = parse({"version": 2, "tags": ["a", "b"], "items": [{"a": 1}, {"a": 2}, {"a": 3}]})
    assert [section.text for section in parsed.sections] == ["a: 1", "a: 2", "a: 3"]
    assert parsed.sections[2].locator == Locator(record=2, pointer="/items/2")


def test_pointers_escape_tilde_and_slash() -> None:
    parsed = parse({"a/b~c": [{"x": 1}]})
    assert parsed.sections[0].locator.pointer == "/a~1b~0c/0"
    assert json_pointer("~1", "/", 0) == "/~01/~1/0"


def test_an_object_without_one_array_of_objects_is_one_record() -> None:
    value = {"first": [{"a": 1}], "second": [{"b": 2}], "name": "Two lists"}
    parsed = parse(value)
    [section] = parsed.sections
    assert section.heading_path == ("Two lists",)
    assert section.locator == Locator(record=0, pointer="")
    assert section.text == 'first: [{"a":1}]\nsecond: [{"b":2}]\nname: Two lists'


def test_nested_objects_are_flattened_with_dotted_keys() -> None:
    record = {
        "name": "Aurora X200",
        "price": {"amount": 199.5, "currency": "USD", "tax": {"included": True}},
        "colours": ["white", "black", None, 3],
        "parts": [{"id": "P1"}, ["nested"]],
        "note": None,
        "empty": "",
        "nothing": {},
        "text": "line one\nline   two",
    }
    assert record_lines(record) == [
        "name: Aurora X200",
        "price.amount: 199.5",
        "price.currency: USD",
        "price.tax.included: true",
        "colours: white, black, 3",
        'parts: [{"id":"P1"},["nested"]]',
        "text: line one line two",
    ]


def test_scalar_and_empty_records_are_kept_or_skipped_by_their_text() -> None:
    parsed = parse(["plain text", {}, None, [1, 2], {"a": None}, 42])
    assert [(section.text, section.locator.record) for section in parsed.sections] == [
        ("plain text", 0), ("1, 2", 3), ("42", 5),
    ]


def test_nesting_past_the_depth_limit_is_rejected() -> None:
    value: Any = "deep"
    for _ in range(6):
        value = {"a": value}
    assert parse(value, ParseLimits(max_xml_depth=6)).sections[0].text == "a.a.a.a.a.a: deep"
    with pytest.raises(DocumentRejected, match=r"nests objects and arrays more than 5 deep"):
        parse(value, ParseLimits(max_xml_depth=5))


def test_nesting_deeper_than_python_can_parse_is_rejected_as_too_deep() -> None:
    data = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_XML_DEPTH"):
        parse_document("deep.json", data)
    with pytest.raises(DocumentRejected, match="JSONL line 2 nests"):
        parse_document("deep.jsonl", b"{}\n" + data)


def test_records_count_against_the_block_limit_and_text_against_the_char_limit() -> None:
    records = [{"n": n} for n in range(5)]
    assert len(parse(records, ParseLimits(max_document_blocks=5)).sections) == 5
    with pytest.raises(DocumentRejected, match="more than 4 records"):
        parse(records, ParseLimits(max_document_blocks=4))
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_DOCUMENT_CHARS"):
        parse([{"text": "x" * 100}], ParseLimits(max_document_chars=50))


def test_jsonl_has_a_record_per_line_and_skips_blank_lines() -> None:
    data = jsonl(['{"question": "Q1", "answer": "A1"}', "", "  ", '{"question": "Q2"}\r', ""])
    parsed = parse_document("faq.jsonl", data)
    assert parsed.media_type == JSONL_MEDIA_TYPE
    assert [section.text for section in parsed.sections] == [
        "question: Q1\nanswer: A1", "question: Q2",
    ]
    assert [section.locator for section in parsed.sections] == [
        Locator(record=0), Locator(record=1),
    ]


def test_a_malformed_jsonl_line_is_rejected_naming_its_line_number() -> None:
    data = jsonl(['{"a": 1}', "", '{"a": 2,}', '{"a": 3}'])
    with pytest.raises(DocumentRejected, match=r"JSONL line 3 is not valid JSON"):
        parse_document("records.jsonl", data)


def test_a_line_separator_inside_a_string_does_not_split_a_jsonl_record() -> None:
    parsed = parse_document("records.jsonl", '{"a": "x\u2028y"}\n'.encode())
    assert len(parsed.sections) == 1


def test_invalid_json_is_rejected_and_several_values_point_to_jsonl() -> None:
    with pytest.raises(DocumentRejected, match="file is not valid JSON"):
        parse_document("bad.json", b'{"a": ')
    with pytest.raises(DocumentRejected, match=r"\.jsonl file"):
        parse_document("lines.json", b'{"a": 1}\n{"a": 2}\n')


def test_json_must_be_utf8_with_or_without_a_bom() -> None:
    value = {"城市": "上海"}
    text = json.dumps(value, ensure_ascii=False)
    assert parse_json(b"\xef\xbb\xbf" + text.encode()).sections[0].text == "城市: 上海"
    with pytest.raises(DocumentRejected, match=r"must be UTF-8 \(RFC 8259\)"):
        parse_document("gbk.json", text.encode("gb18030"))
    with pytest.raises(DocumentRejected, match="UTF-16"):
        parse_document("wide.json", text.encode("utf-16"))
    with pytest.raises(DocumentRejected, match="JSONL must be UTF-8"):
        parse_document("gbk.jsonl", text.encode("gb18030"))


def test_an_empty_array_has_no_extractable_text() -> None:
    with pytest.raises(DocumentRejected, match="no extractable text"):
        parse_document("empty.json", b"[]")


def test_uppercase_extensions_are_parsed_as_json_and_jsonl() -> None:
    assert parse_document("A.JSON", b'{"a": 1}').media_type == "application/json"
    assert parse_document("A.JSONL", b'{"a": 1}').media_type == "application/jsonl"
