"""The filter language: its grammar, errors that point at the offending part, limits, and the
reference evaluator's semantics per type (closed-form cases), which the compiled predicate
the search runs must share."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import Value
from ragsift.domain.metadata_filter import FilterLimits, evaluate, parse_filter
from ragsift.domain.metadata_predicate import compile_predicate

DOC: dict[str, Value] = {
    "dept": "hr", "year": 2024, "score": 0.75, "final": True, "tags": ("policy", "leave"),
    "issued": date(2024, 5, 1), "at": datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
    "title": "Annual leave policy", "source": "wiki",
}


def _passes(raw: dict[str, Any]) -> bool:
    node = parse_filter(raw)
    reference = evaluate(node, DOC)
    assert compile_predicate(node)(DOC) is reference  # the search's fast path agrees
    return reference


@pytest.mark.parametrize(("raw", "expected"), [
    ({"dept": "hr"}, True),
    ({"dept": "it"}, False),
    ({"dept": {"$ne": "it"}}, True),
    ({"missing": {"$ne": "x"}}, True),  # absent: $ne and $nin hold
    ({"missing": {"$nin": ["x"]}}, True),
    ({"missing": "x"}, False),
    ({"year": 2024.0}, True),  # numbers compare across int and float
    ({"year": "2024"}, False),  # a string is not a number
    ({"year": {"$gte": 2024, "$lt": 2025}}, True),
    ({"year": {"$gt": 2024}}, False),
    ({"score": {"$lte": 0.75}}, True),
    ({"final": True}, True),
    ({"final": 1}, False),  # a boolean is not a number
    ({"tags": "leave"}, True),  # $eq on a list: some element
    ({"tags": {"$in": ["x", "policy"]}}, True),
    ({"tags": {"$nin": ["policy"]}}, False),
    ({"tags": {"$contains": "leave"}}, True),
    ({"title": {"$contains": "leave"}}, True),  # on a string: a substring
    ({"title": {"$contains": "Leave"}}, False),
    ({"year": {"$contains": "2"}}, False),  # on a number: never
    ({"title": {"$startswith": "Annual"}}, True),
    ({"title": {"$startswith": "leave"}}, False),
    ({"title": {"$endswith": "policy"}}, True),
    ({"title": {"$endswith": "Policy"}}, False),
    ({"tags": {"$startswith": "pol"}}, False),  # strings only: never on a list
    ({"year": {"$endswith": "4"}}, False),  # nor on a number
    ({"missing": {"$startswith": ""}}, False),
    ({"$not": {"missing": {"$endswith": "x"}}}, True),
    ({"issued": {"$date": "2024-05-01"}}, True),
    ({"issued": "2024-05-01"}, False),  # a date is not a string
    ({"issued": {"$gte": {"$date": "2024-01-01"}}}, True),
    ({"issued": {"$lt": {"$date": "2024-05-01"}}}, False),
    ({"issued": {"$gt": {"$datetime": "2024-01-01T00:00:00Z"}}}, False),  # date vs datetime
    ({"at": {"$gt": {"$datetime": "2024-05-01T09:00:00+00:00"}}}, True),
    ({"dept": {"$gt": "a"}}, True),  # strings order lexicographically
    ({"tags": {"$gt": "a"}}, False),  # lists cannot be ordered
    ({"dept": {"$exists": True}}, True),
    ({"missing": {"$exists": False}}, True),
    ({"source": "wiki"}, True),  # a scope field
    ({"$or": [{"dept": "it"}, {"year": 2024}]}, True),
    ({"$and": [{"dept": "hr"}, {"year": 2023}]}, False),
    ({"$not": {"dept": "hr"}}, False),
    ({"dept": "hr", "year": 2023}, False),  # several fields: all hold
])
def test_reference_semantics(raw: dict[str, Any], expected: bool) -> None:
    assert _passes(raw) is expected


@pytest.mark.parametrize(("raw", "path"), [
    ({"$or": [{"dept": "hr"}, {"year": {"$gt": True}}]}, r"filter\.\$or\[1\]\.year\.\$gt"),
    ({"year": {"$between": [1, 2]}}, r"filter\.year\.\$between: unknown operator"),
    ({"$xor": []}, r"filter\.\$xor: unknown operator"),
    ({"$and": []}, r"filter\.\$and: \$and takes a non-empty list"),
    ({"tags": {"$in": "a"}}, r"filter\.tags\.\$in: \$in takes a list"),
    ({"tags": {"$in": ["a", ["b"]]}}, r"filter\.tags\.\$in\[1\]: a list is not a value"),
    ({"dept": None}, r"filter\.dept: null is not a value"),
    ({"dept": {"$startswith": 1}}, r"filter\.dept\.\$startswith: \$startswith takes a string"),
    ({"dept": {"$exists": 1}}, r"filter\.dept\.\$exists: \$exists takes true or false"),
    ({"x y": 1}, r"filter\.x y: 'x y' is not a metadata key"),
    # reserved for built-ins a filter cannot reach: refused, not silently never matched
    ({"filename": "a.md"}, r"filter\.filename: 'filename' is a built-in field"),
    ({"$or": [{"dept": "hr"}, {"kb_id": {"$ne": "x"}}]}, r"filter\.\$or\[1\]\.kb_id: "),
    ({"allowed_roles": {"$contains": "hr"}}, r"filter\.allowed_roles: "),
    ({"$not": {}}, r"filter\.\$not: a filter is a non-empty JSON object"),
    ({"d": {"$eq": {"$date": "2024-02-30"}}}, r"filter\.d\.\$eq: '2024-02-30' is not an ISO"),
])
def test_errors_point_at_the_offending_part(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidInput, match=path):
        parse_filter(raw)


def test_depth_and_size_are_bounded() -> None:
    deep: dict[str, Any] = {"dept": "hr"}
    for _ in range(5):
        deep = {"$not": deep}
    parse_filter(deep, FilterLimits(max_depth=6))
    with pytest.raises(InvalidInput, match="deeper than 5"):
        parse_filter(deep, FilterLimits(max_depth=5))
    wide = {f"k{i}": i for i in range(10)}
    with pytest.raises(InvalidInput, match="more than 9 conditions"):
        parse_filter(wide, FilterLimits(max_nodes=9))
