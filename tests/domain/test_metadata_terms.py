"""Metadata as tokens and filters as token trees: equal to the reference evaluator."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_filter import evaluate, parse_filter
from ragsift.domain.metadata_predicate import compile_predicate
from ragsift.domain.metadata_terms import (
    MAX_TOKENS,
    AllOf,
    AnyToken,
    Distinct,
    Documents,
    NoneOf,
    compile_terms,
    document_tokens,
    fingerprint,
    holds_on,
    presence_token,
    scalar_token,
)

words = st.sampled_from(("hr", "it", "h", "人事", "", "a\x1fb", "x" * 600, "\\", "'\" or 1=1"))
dates = st.sampled_from(("2023-12-31", "2024-01-01")).map(lambda d: {"$date": d})
moments = st.sampled_from(("2024-01-01T08:00:00+00:00", "2024-01-01T09:00:00+01:00",
                           "2024-01-01T08:00:01Z")).map(lambda d: {"$datetime": d})
scalars = st.one_of(words, st.integers(2022, 2025), st.sampled_from((2023.0, 2023.5, 0.0, 1)),
                    st.booleans(), dates, moments)
values = st.one_of(scalars, st.lists(words, max_size=3))
KEYS = ("dept", "year", "tags", "issued")
metadata = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)


def _condition() -> st.SearchStrategy[dict[str, Any]]:
    ops = st.one_of(
        st.tuples(st.sampled_from(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")),
                  scalars.filter(lambda v: not isinstance(v, bool))),
        st.tuples(st.sampled_from(("$eq", "$ne")), st.booleans() | st.sampled_from(("d1",))),
        st.tuples(st.sampled_from(("$in", "$nin")), st.lists(scalars, max_size=3)),
        st.tuples(st.just("$exists"), st.booleans()),
        st.tuples(st.sampled_from(("$contains", "$startswith", "$endswith")), words),
    )
    return st.builds(lambda name, op: {name: {op[0]: op[1]}},
                     st.sampled_from((*KEYS, "document_id")), ops)


def _combined(leaves: st.SearchStrategy[dict[str, Any]],
              max_leaves: int) -> st.SearchStrategy[dict[str, Any]]:
    """Filters of `leaves` under $and, $or and $not."""
    return st.recursive(leaves, lambda inner: st.one_of(
        st.builds(lambda parts: {"$and": parts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda parts: {"$or": parts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda part: {"$not": part}, inner)), max_leaves=max_leaves)


filters = _combined(_condition(), max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(stored=st.lists(metadata, min_size=1, max_size=8), raw=filters)
def test_a_compiled_filter_holds_on_exactly_the_documents_the_reference_passes(
    stored: list[dict[str, Any]], raw: dict[str, Any],
) -> None:
    _check_against_the_reference(stored, raw)


# keys holding scalars of one type each, more documents: conditions most values pass, sent
# as the key without the failing values
scalar_metadata = st.fixed_dictionaries({}, optional={
    "dept": words, "year": st.integers(2018, 2025), "issued": dates | moments,
    "tags": st.sampled_from((2023.0, 2023.5, 0.0, 1))})


year_ranges = st.builds(lambda op, year: {"year": {op: year}},
                        st.sampled_from(("$gt", "$gte", "$lt", "$lte")), st.integers(2017, 2026))
scalar_filters = _combined(year_ranges | _condition(), max_leaves=4)


@settings(max_examples=300, deadline=None)
@given(stored=st.lists(scalar_metadata, min_size=3, max_size=16), raw=scalar_filters)
def test_a_filter_on_keys_holding_scalars_only_holds_where_the_reference_passes(
    stored: list[dict[str, Any]], raw: dict[str, Any],
) -> None:
    _check_against_the_reference(stored, raw)


def _check_against_the_reference(stored: list[dict[str, Any]], raw: dict[str, Any]) -> None:
    records = {f"d{i}": {**decode_metadata(values), "document_id": f"d{i}"}
               for i, values in enumerate(stored)}
    node = parse_filter(raw)

    def documents(part: Any) -> frozenset[str]:
        holds = compile_predicate(part)
        return frozenset(d for d, record in records.items() if holds(record))

    tree = compile_terms(node, Distinct(records), documents)
    for doc_id, values in zip(records, stored, strict=True):
        tokens = frozenset(document_tokens(decode_metadata(values)))
        assert holds_on(tree, doc_id, tokens) == evaluate(node, records[doc_id]), doc_id


def test_values_every_operator_treats_alike_share_one_token() -> None:
    assert scalar_token("y", 2024) == scalar_token("y", 2024.0)
    assert scalar_token("y", True) != scalar_token("y", 1)
    eight_utc = datetime(2024, 1, 1, 8, tzinfo=UTC)
    nine_plus_one = datetime(2024, 1, 1, 9, tzinfo=timezone(timedelta(hours=1)))
    assert scalar_token("t", eight_utc) == scalar_token("t", nine_plus_one)
    assert scalar_token("t", date(2024, 1, 1)) != scalar_token("t", "2024-01-01")
    assert scalar_token("a", "x") != scalar_token("b", "x")


def test_a_long_value_is_a_short_token_of_its_own() -> None:
    long_a, long_b = "a" * 5000, "a" * 4999 + "b"
    assert len(scalar_token("k", long_a).encode()) < 100
    assert scalar_token("k", long_a) != scalar_token("k", long_b)
    assert scalar_token("k", long_a) == scalar_token("k", "a" * 5000)


def test_the_fingerprint_tells_metadata_apart() -> None:
    one = document_tokens({"dept": "hr", "tags": ("a", "b")})
    assert fingerprint(one) == fingerprint(document_tokens({"tags": ("b", "a"), "dept": "hr"}))
    assert fingerprint(one) != fingerprint(document_tokens({"dept": "hr", "tags": ("a",)}))
    assert fingerprint(()) != fingerprint(one)


def test_a_range_over_many_distinct_values_goes_by_document() -> None:
    records = {f"d{i}": {"n": i} for i in range(2 * MAX_TOKENS + 10)}
    node = parse_filter({"n": {"$gte": MAX_TOKENS + 5}})  # over MAX_TOKENS pass and fail
    tree = compile_terms(node, Distinct(records), lambda part: frozenset({"sent"}))
    assert tree == Documents(frozenset({"sent"}))
    few = compile_terms(parse_filter({"n": {"$lt": 2}}), Distinct(records),
                        lambda part: frozenset())
    assert isinstance(few, AnyToken) and len(few.tokens) == 2


def test_a_condition_most_values_pass_goes_as_the_key_without_the_failing_ones() -> None:
    records = {f"d{i}": {"year": 2015 + i % 10} for i in range(40)} | {"d99": {}}
    tree = compile_terms(parse_filter({"year": {"$lt": 2024}}), Distinct(records),
                         lambda part: frozenset())
    assert tree == AllOf((AnyToken(frozenset({presence_token("year")})),
                          NoneOf(AnyToken(frozenset({scalar_token("year", 2024)})))))
    # every value passes: the key's presence alone
    assert compile_terms(parse_filter({"year": {"$gte": 2000}}), Distinct(records),
                         lambda part: frozenset()) == AnyToken(frozenset({"year\x1f"}))
    # a key holding a list somewhere: a list may hold a failing and a passing element
    listed = records | {"d98": {"year": ("2016", "2024")}}
    tree = compile_terms(parse_filter({"year": {"$lt": 2024}}), Distinct(listed),
                         lambda part: frozenset())
    assert isinstance(tree, AnyToken) and len(tree.tokens) == 9


def test_a_negation_is_true_where_the_key_is_absent() -> None:
    records: dict[str, dict[str, Any]] = {"d1": {"dept": "hr"}, "d2": {}}
    tree = compile_terms(parse_filter({"dept": {"$ne": "hr"}}), Distinct(records),
                         lambda part: frozenset())
    assert isinstance(tree, NoneOf)
    assert not holds_on(tree, "d1", frozenset(document_tokens({"dept": "hr"})))
    assert holds_on(tree, "d2", frozenset())
