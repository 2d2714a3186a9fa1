"""SearchFilter -> Milvus expression: exact text, escaping, refusal of unknown fields."""

from __future__ import annotations

import pytest

from ragsift.adapters.milvus.filter_expr import (
    CLAUSES,
    REPEATS,
    UnsupportedFilter,
    compile_filter,
    quote,
)
from ragsift.domain.filters import SearchFilter

HOSTILE = [
    '" or kb_id != "',
    "' or kb_id != '",
    'a"] or document_id in ["',
    "\\",
    '\\"',
    '"',
    "x\ny\r\tz",
    "\\n",
    "",
    "知识库",
]


def test_a_kb_only_filter_compiles_to_one_comparison() -> None:
    assert compile_filter(SearchFilter(kb_id="kb-1", roles=None)) == 'kb_id == "kb-1"'


def test_a_filter_naming_no_role_keeps_unrestricted_chunks_only() -> None:
    # roles fail closed: every role (None) must be asked for explicitly
    assert compile_filter(SearchFilter(kb_id="kb-1")) == (
        'kb_id == "kb-1" and array_length(allowed_roles) == 0'
    )


def test_every_field_compiles_to_its_clause_kb_first_values_sorted() -> None:
    search_filter = SearchFilter(
        kb_id="kb",
        document_ids=frozenset({"d2", "d1"}),
        sources=frozenset({"wiki"}),
        tenant_ids=frozenset({"t"}),
        dataset_ids=frozenset({"b", "a", "c"}),
        visibilities=frozenset({"public", ""}),
        roles=None,
    )
    assert compile_filter(search_filter) == (
        'kb_id == "kb" and document_id in ["d1", "d2"] and source == "wiki" '
        'and tenant_id == "t" and dataset_id in ["a", "b", "c"] '
        'and visibility in ["", "public"]'
    )


def test_roles_admit_unrestricted_chunks_and_chunks_sharing_a_role() -> None:
    assert compile_filter(SearchFilter(kb_id="kb", roles=frozenset({"hr", "admin"}))) == (
        'kb_id == "kb" and (array_length(allowed_roles) == 0 '
        'or array_contains_any(allowed_roles, ["admin", "hr"]))'
    )
    # a caller without roles sees only unrestricted chunks
    assert compile_filter(SearchFilter(kb_id="kb", roles=frozenset())) == (
        'kb_id == "kb" and array_length(allowed_roles) == 0'
    )


def test_a_version_keeps_the_chunks_whose_window_contains_it() -> None:
    assert compile_filter(SearchFilter(kb_id="kb", version_seq=3, roles=None)) == (
        'kb_id == "kb" and valid_from_seq <= 3 and (valid_to_seq == 0 or valid_to_seq > 3)'
    )


def test_an_empty_set_in_any_field_admits_nothing() -> None:
    for field in ("document_ids", "sources", "tenant_ids", "dataset_ids", "visibilities"):
        assert compile_filter(SearchFilter.model_validate({"kb_id": "kb", field: []})) is None


def test_quotes_backslashes_and_line_breaks_are_escaped() -> None:
    assert quote('a"b') == '"a\\"b"'
    assert quote("a\\b") == '"a\\\\b"'
    assert quote('\\"') == '"\\\\\\""'
    assert quote("x\ny\r\tz") == '"x\\ny\\r\\tz"'
    assert quote("知识库 'x'") == "\"知识库 'x'\""
    assert compile_filter(SearchFilter(kb_id='" or kb_id != "', roles=None)) == (
        'kb_id == "\\" or kb_id != \\""'
    )


@pytest.mark.parametrize("value", HOSTILE)
def test_milvus_parses_every_escaped_value_back_as_one_literal(
    milvus_lite: None, value: str
) -> None:
    from milvus_lite.search.filter import parse_expr
    from milvus_lite.search.filter.ast import And, ArrayContainsOp, CmpOp, InOp, StringLit

    expr = parse_expr(
        compile_filter(
            SearchFilter(
                kb_id=value or "kb",
                sources=frozenset({value, "plain"}),
                roles=frozenset({value, "plain"}),
            )
        )
    )
    assert isinstance(expr, And)
    kb, sources, roles = expr.operands
    assert isinstance(kb, CmpOp) and kb.left.name == "kb_id"
    assert kb.right == StringLit(value=value or "kb", pos=kb.right.pos)
    assert isinstance(sources, InOp) and sources.field.name == "source"
    assert sorted(e.value for e in sources.values.elements) == sorted([value, "plain"])
    any_role = roles.operands[1]
    assert isinstance(any_role, ArrayContainsOp) and any_role.mode == "any"
    assert sorted(e.value for e in any_role.values.elements) == sorted([value, "plain"])


def test_every_search_filter_field_has_a_clause_or_repeats_one() -> None:
    # A new SearchFilter field needs a clause (and a schema field) before Milvus can serve it,
    # unless it only repeats another field in another form (REPEATS).
    assert set(CLAUSES) | REPEATS == set(SearchFilter.model_fields)
    assert not set(CLAUSES) & REPEATS


class _FilterWithRegions(SearchFilter):
    regions: frozenset[str] | None = None


def test_a_set_field_without_a_clause_is_refused_rather_than_ignored() -> None:
    assert compile_filter(_FilterWithRegions(kb_id="kb", roles=None)) == 'kb_id == "kb"'
    with pytest.raises(UnsupportedFilter, match="regions"):
        compile_filter(_FilterWithRegions(kb_id="kb", roles=None, regions=frozenset({"eu"})))
