"""Document metadata values: keys checked, types kept (a date is not a string), sizes bounded,
command-line values typed by what they read as."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import (
    MetadataLimits,
    cli_pairs,
    cli_value,
    decode_metadata,
    merge_metadata,
    same_metadata,
    validate_metadata,
)

LIMITS = MetadataLimits()


def test_json_types_are_kept_and_tagged_dates_decode_as_dates() -> None:
    stored = validate_metadata({
        "dept": "hr", "year": 2024, "score": 0.5, "final": True, "tags": ["a", "b"],
        "issued": {"$date": "2024-05-01"}, "at": {"$datetime": "2024-05-01T09:30:00"},
        "部门": "人事",
    }, LIMITS)
    assert stored["issued"] == {"$date": "2024-05-01"}
    assert stored["at"] == {"$datetime": "2024-05-01T09:30:00+00:00"}  # no offset: UTC
    typed = decode_metadata(stored)
    assert typed["issued"] == date(2024, 5, 1) and type(typed["issued"]) is date
    assert typed["at"] == datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    assert typed["tags"] == ("a", "b") and typed["final"] is True and typed["部门"] == "人事"


@pytest.mark.parametrize(("raw", "message"), [
    ({"1abc": 1}, "invalid"),
    ({"a b": 1}, "invalid"),
    ({"$gt": 1}, "invalid"),
    ({"x" * 65: 1}, "invalid"),
    # the scope tests' injection strings as keys: refused, never stored or queried
    ({'" or kb_id != "': 1}, "invalid"),
    ({"a\"] or document_id in [\"": 1}, "invalid"),
    ({"x\ny": 1}, "invalid"),
    ({"ab\n": 1}, "invalid"),
    ({"*": 1}, "invalid"),
    ({"tenant_id": "t1"}, "reserved"),
    ({"source": "x"}, "reserved"),
    ({"tags": [1, 2]}, "strings only"),
    ({"nested": {"a": 1}}, "got"),
    ({"none": None}, "got"),
    ({"issued": {"$date": "2024-13-01"}}, "not an ISO date"),
    ({"issued": {"$date": "2024-05-01T10:00:00"}}, "not an ISO date"),
    ("not an object", "JSON object"),
])
def test_bad_metadata_is_refused_with_the_reason(raw: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        validate_metadata(raw, LIMITS)


def test_sizes_are_bounded_by_the_limits() -> None:
    small = MetadataLimits(max_keys=2, max_string_chars=5, max_list_items=2, max_bytes=64)
    with pytest.raises(InvalidInput, match="at most 2"):
        validate_metadata({"a": 1, "b": 2, "c": 3}, small)
    with pytest.raises(InvalidInput, match="longer than 5"):
        validate_metadata({"a": "toolong"}, small)
    with pytest.raises(InvalidInput, match="3 items"):
        validate_metadata({"a": ["x", "y", "z"]}, small)
    with pytest.raises(InvalidInput, match="bytes"):
        validate_metadata({"a": "abcde", "b": ["abcde", "abcde"]}, MetadataLimits(max_bytes=30))


@pytest.mark.parametrize(("text", "value"), [
    ("2024", 2024), ("-3", -3), ("2.5", 2.5), ("1e3", 1000.0), ("true", True),
    ("false", False), ("2024-05-01", date(2024, 5, 1)),
    ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    ('"007"', "007"), ('"2024"', "2024"), ("hr", "hr"), ("", ""), ("007x", "007x"),
    ("True", "True"), ("2024-5-1", "2024-5-1"),
])
def test_a_command_line_value_is_typed_by_what_it_reads_as(text: str, value: object) -> None:
    typed = cli_value(text)
    assert typed == value and type(typed) is type(value)


def test_cli_pairs_give_the_json_form_and_refuse_a_missing_equals_sign() -> None:
    assert cli_pairs(["year=2024", "issued=2024-05-01", "code=\"007\"", "note=a=b"]) == {
        "year": 2024, "issued": {"$date": "2024-05-01"}, "code": "007", "note": "a=b"}
    with pytest.raises(InvalidInput, match="key=value"):
        cli_pairs(["dept"])


def test_a_merge_patch_sets_replaces_and_removes_keys() -> None:
    merged = merge_metadata({"dept": "hr", "year": 2023, "old": "x"},
                            {"year": 2024, "old": None, "new": ["a"]}, LIMITS)
    assert merged == {"dept": "hr", "year": 2024, "new": ["a"]}


def test_same_metadata_tells_types_apart_and_ignores_key_order() -> None:
    assert same_metadata({"a": 1, "b": [True]}, {"b": [True], "a": 1})
    for first, other in ((True, 1), (False, 0.0), (1, 1.0), ("1", 1), ([1], [True])):
        assert not same_metadata({"a": first}, {"a": other})
    assert not same_metadata({"a": 1}, {"a": 1, "b": None})
