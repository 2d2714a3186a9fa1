"""Document metadata as index terms, and a metadata filter compiled into those terms.

A metadata filter reaches the indexes as the documents that pass it (scope_metadata.py); a
BM25 index that holds every chunk's metadata as terms can instead restrict by a few term
postings (`dept = hr`: one term) where a whitelist of 1,000 documents costs a term per
document (2-3 ms a search at 100k chunks, docs/benchmarks.md). Each document value becomes
one token: `field`, a separator and the value's kind and canonical text, so two values get
one token exactly when every operator of the filter language treats them alike (2024 and
2024.0; one instant in two time zones); a list gives one token per element, and every key
present gives a presence token.

A condition compiles against the values the KB's documents hold: `year >= 2020` becomes the
tokens of the years present that pass it (the filter's own predicate decides), so ranges,
prefixes and substrings need no range query. A condition on a built-in scope field, or one
passing more distinct values than MAX_TOKENS, stays a set of documents.

The index's terms describe the metadata a chunk was indexed with; a document changed since
(a PATCH changes only the facts) is found by its fingerprint and filtered by document
instead (bm25_filters.py), so a stale term never decides a search.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from ragsift.domain.metadata import SCOPE_KEYS, Value
from ragsift.domain.metadata_filter import And, Condition, Node, Not, Or
from ragsift.domain.metadata_predicate import compile_predicate

# a distinct value's tokens per condition; past it the condition is sent as documents
MAX_TOKENS = 256
_SEP = "\x1f"  # never in a key (metadata.KEY_PATTERN)
# a token's value part longer than this is sent as its digest
MAX_VALUE_BYTES = 512
_FINGERPRINT_BYTES = 6


def presence_token(key: str) -> str:
    """The token every document holding `key` carries."""
    return f"{key}{_SEP}"


def element_token(key: str, item: str) -> str:
    """The token of one string of a list value."""
    return _bounded(key, f"e{_SEP}{item}")


def scalar_token(key: str, value: Value) -> str:
    """The token of a scalar value: equal for values every operator treats alike."""
    return _bounded(key, _canonical(value))


def _bounded(key: str, text: str) -> str:
    # an index term has a bounded length (tantivy's is 64 KB) and a value may be longer:
    # a long one is its digest, which no short one can be ("h" is no kind letter)
    if len(text.encode()) > MAX_VALUE_BYTES:
        text = "h" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    return f"{key}{_SEP}{text}"


def _canonical(value: Value) -> str:
    if type(value) is bool:
        return "b" + ("1" if value else "0")
    if type(value) is int:
        return f"n{value}"
    if type(value) is float:  # 2024.0 == 2024 for every operator: one token
        return f"n{int(value)}" if value.is_integer() else f"n{value!r}"
    if type(value) is str:
        return f"s{value}"
    if type(value) is datetime:  # one instant, whatever the offset it was given in
        return f"t{value.astimezone(UTC).isoformat()}"
    if type(value) is date:
        return f"d{value.isoformat()}"
    raise TypeError(f"not a scalar metadata value: {value!r}")


def document_tokens(metadata: Mapping[str, Value]) -> tuple[str, ...]:
    """A document's metadata as index tokens (sorted, each once)."""
    tokens: set[str] = set()
    for key, value in metadata.items():
        tokens.add(presence_token(key))
        if type(value) is tuple:
            tokens.update(element_token(key, item) for item in value)
        else:
            tokens.add(scalar_token(key, value))
    return tuple(sorted(tokens))


def fingerprint(tokens: tuple[str, ...]) -> int:
    """48 bits that differ, but for a hash collision, between two documents' token sets."""
    digest = hashlib.blake2b("\x1e".join(tokens).encode(), digest_size=_FINGERPRINT_BYTES)
    return int.from_bytes(digest.digest(), "big")


@dataclass(frozen=True, slots=True)
class AnyToken:
    """Documents carrying one of `tokens` (none when empty)."""

    tokens: frozenset[str]


@dataclass(frozen=True, slots=True)
class Documents:
    """These documents: a condition the tokens cannot express."""

    ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class AllOf:
    parts: tuple[TermNode, ...]


@dataclass(frozen=True, slots=True)
class OneOf:
    parts: tuple[TermNode, ...]


@dataclass(frozen=True, slots=True)
class NoneOf:
    part: TermNode


TermNode = AnyToken | Documents | AllOf | OneOf | NoneOf


@dataclass(frozen=True, eq=False)
class MetadataTerms:
    """A filter as terms over a KB's documents as they are now: the tree, and each
    document's fingerprint (of document_tokens), which tells a chunk indexed with other
    metadata. Compared by identity: one object per filter and state of the KB."""

    tree: TermNode
    fingerprints: Mapping[str, int] = field(repr=False)


class Distinct:
    """The scalar values a KB's documents hold under a key, by token, and whether some
    document holds a list there; read per key on first use (a filter names few keys)."""

    def __init__(self, records: Mapping[str, Mapping[str, Value]]) -> None:
        self._records = records
        self._keys: dict[str, tuple[dict[str, Value], bool]] = {}

    def of(self, key: str) -> tuple[dict[str, Value], bool]:
        """(token -> value of each scalar held under `key`, whether a list is)."""
        found = self._keys.get(key)
        if found is None:
            values: dict[str, Value] = {}
            listed = False
            for record in self._records.values():
                value = record.get(key)
                if type(value) is tuple:
                    listed = True
                elif value is not None:
                    values.setdefault(scalar_token(key, value), value)
            found = self._keys[key] = (values, listed)
        return found


def compile_terms(node: Node, distinct: Distinct,
                  documents: Callable[[Node], frozenset[str]]) -> TermNode:
    """`node` as a term tree equal to it on every document of the KB `distinct` was read
    from; `documents(part)`: the documents passing a part sent as documents."""
    if isinstance(node, Not):
        return NoneOf(compile_terms(node.part, distinct, documents))
    if isinstance(node, And | Or):
        parts = tuple(compile_terms(part, distinct, documents) for part in node.parts)
        return AllOf(parts) if isinstance(node, And) else OneOf(parts)
    assert isinstance(node, Condition)
    if node.field in SCOPE_KEYS or node.field.startswith("$"):
        return Documents(documents(node))
    if node.op in ("$ne", "$nin"):  # true when absent: the negation of $eq / $in
        positive = Condition(node.field, "$eq" if node.op == "$ne" else "$in", node.operand)
        return NoneOf(compile_terms(positive, distinct, documents))
    if node.op == "$exists":
        present = AnyToken(frozenset({presence_token(node.field)}))
        return present if node.operand is True else NoneOf(present)
    holds = compile_predicate(node)
    values, listed = distinct.of(node.field)
    tokens = {token for token, value in values.items() if holds({node.field: value})}
    # a list holds a condition only by an element: $eq / $in / $contains of a string (no
    # element term where no document holds a list: each costs a lookup per segment)
    operands = node.operand if isinstance(node.operand, tuple) else (node.operand,)
    if node.op in ("$eq", "$in", "$contains") and listed:
        tokens.update(element_token(node.field, item) for item in operands
                      if type(item) is str)
    elif not listed and 1 + len(values) - len(tokens) < len(tokens):
        return _holding_none_of(node.field, values.keys() - tokens, documents, node)
    if len(tokens) > MAX_TOKENS:
        return Documents(documents(node))
    return AnyToken(frozenset(tokens))


def _holding_none_of(key: str, failing: Set[str], documents: Callable[[Node], frozenset[str]],
                     node: Condition) -> TermNode:
    """Documents holding `key` but none of the `failing` values: where no document holds a
    list there, each one holding the key carries exactly one value token, so this equals
    the passing values' tokens, in fewer postings when the failing values and the key's
    presence are fewer than the passing values (`year < 2024`: two terms instead of
    nine)."""
    present = AnyToken(frozenset({presence_token(key)}))
    if not failing:
        return present
    if len(failing) > MAX_TOKENS:
        return Documents(documents(node))
    return AllOf((present, NoneOf(AnyToken(frozenset(failing)))))


def holds_on(tree: TermNode, document_id: str, tokens: frozenset[str]) -> bool:
    """Whether a document with these tokens passes `tree` (the reference for the indexes)."""
    if isinstance(tree, AnyToken):
        return not tree.tokens.isdisjoint(tokens)
    if isinstance(tree, Documents):
        return document_id in tree.ids
    if isinstance(tree, NoneOf):
        return not holds_on(tree.part, document_id, tokens)
    if isinstance(tree, AllOf):
        return all(holds_on(part, document_id, tokens) for part in tree.parts)
    return any(holds_on(part, document_id, tokens) for part in tree.parts)
