"""SearchFilter -> Milvus boolean expression, with every string value escaped.

milvus-lite ignores `filter_params` templates (a `{name}` placeholder is a parse error
there), so values are written as escaped double-quoted literals, which both engines parse
the same way. One clause function per filter field; `compile_filter` joins them with `and`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ragsift.domain.filters import SearchFilter

# Backslash first, so the escapes added for the others are not escaped again. Raw newlines
# and carriage returns end a string literal in Milvus' grammar, so they are escaped as well.
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))


class NothingAllowed(Exception):
    """The filter admits no chunk (an empty set of accepted values)."""


class UnsupportedFilter(ValueError):
    """A SearchFilter field is set that this compiler has no clause for.

    Ignoring it could widen a data-scope restriction, so the search fails instead.
    """


def quote(value: str) -> str:
    """`value` as a double-quoted Milvus string literal that reads back as exactly `value`."""
    for raw, escaped in _ESCAPES:
        value = value.replace(raw, escaped)
    return f'"{value}"'


def equals(field: str, value: str) -> str:
    """`field == "value"`."""
    return f"{field} == {quote(value)}"


def one_of(field: str, values: Iterable[str]) -> str:
    """`field in ["a", "b"]` in sorted order (a stable expression); raises on an empty set."""
    ordered = sorted(set(values))
    if not ordered:
        raise NothingAllowed(field)
    if len(ordered) == 1:
        return equals(field, ordered[0])
    return f"{field} in [{', '.join(quote(v) for v in ordered)}]"


def kb_clause(f: SearchFilter) -> str | None:
    """Always present: the partition key, so Milvus searches one partition."""
    return equals("kb_id", f.kb_id)


def documents_clause(f: SearchFilter) -> str | None:
    """The document whitelist."""
    return None if f.document_ids is None else one_of("document_id", f.document_ids)


def sources_clause(f: SearchFilter) -> str | None:
    """Accepted sources (a null source never matches)."""
    return None if f.sources is None else one_of("source", f.sources)


def tenants_clause(f: SearchFilter) -> str | None:
    """Accepted tenants."""
    return None if f.tenant_ids is None else one_of("tenant_id", f.tenant_ids)


def datasets_clause(f: SearchFilter) -> str | None:
    """Accepted datasets."""
    return None if f.dataset_ids is None else one_of("dataset_id", f.dataset_ids)


def visibilities_clause(f: SearchFilter) -> str | None:
    """Accepted visibilities."""
    return None if f.visibilities is None else one_of("visibility", f.visibilities)


def roles_clause(f: SearchFilter) -> str | None:
    """Unrestricted chunks (no allowed roles), or those sharing a role with the caller's."""
    if f.roles is None:
        return None
    unrestricted = "array_length(allowed_roles) == 0"
    if not f.roles:
        return unrestricted
    listed = ", ".join(quote(role) for role in sorted(f.roles))
    return f"({unrestricted} or array_contains_any(allowed_roles, [{listed}]))"


def version_clause(f: SearchFilter) -> str | None:
    """Chunks valid in version v: valid_from_seq <= v and (valid_to_seq == 0 or > v)."""
    if f.version_seq is None:
        return None
    v = int(f.version_seq)
    return f"valid_from_seq <= {v} and (valid_to_seq == 0 or valid_to_seq > {v})"


# SearchFilter field -> its clause. A field missing here but set on a filter is refused.
CLAUSES: dict[str, Callable[[SearchFilter], str | None]] = {
    "kb_id": kb_clause,
    "document_ids": documents_clause,
    "sources": sources_clause,
    "tenant_ids": tenants_clause,
    "dataset_ids": datasets_clause,
    "visibilities": visibilities_clause,
    "roles": roles_clause,
    "version_seq": version_clause,
}
# fields that repeat another in a form this index does not use: `metadata_terms` is the
# metadata filter `document_ids` already answers (for an index holding metadata terms)
REPEATS = frozenset({"metadata_terms"})


def compile_filter(search_filter: SearchFilter) -> str | None:
    """The expression for `search_filter`, or None when it admits no chunk at all.

    kb_id always comes first: with kb_id as the partition key Milvus then searches one
    partition only.
    """
    _refuse_unknown_fields(search_filter)
    clauses: list[str] = []
    try:
        for clause in CLAUSES.values():
            text = clause(search_filter)
            if text is not None:
                clauses.append(text)
    except NothingAllowed:
        return None
    return " and ".join(clauses)


def _refuse_unknown_fields(search_filter: SearchFilter) -> None:
    for name, info in type(search_filter).model_fields.items():
        if name in REPEATS:
            continue
        if name not in CLAUSES and getattr(search_filter, name) != info.default:
            raise UnsupportedFilter(
                f"the Milvus index cannot compile the filter field {name!r} yet"
            )
