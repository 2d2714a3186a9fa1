"""The schema every kb index shares, a chunk's tantivy document, and the queries over them:
BM25 over the analyzed text, restricted by term-set clauses (scope, documents, roles, version).

A document whitelist (a metadata filter's answer, a request's document ids) is a term set,
which tantivy resolves by walking its term dictionary along every listed key in every
segment: its cost grows with the keys' bytes. Over ragsift's 32-hex document ids, 1,900
documents of a 100k-chunk index cost ~20 ms a search, 10x the text query itself
(docs/benchmarks.md). So an index built now also holds each chunk's `document_key`, a 48-bit
hash of its document id as an integer term, and whitelists go through it. Keys of two
documents can collide (about 1 in 10^7 for a whitelist of 2,000 among 10,000 documents):
a whitelist's hits are re-checked by document id, so a collision never lets a chunk in,
and a complement left out by key could at worst drop an allowed document from BM25's list.
An index built before the key opens with the schema it was built with (`keyed` False) and
keeps filtering by document id until `ragsift rebuild-sparse` rebuilds it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import tantivy
from tantivy import Occur, Query

from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.metadata_terms import fingerprint

SCOPE_FIELDS = ("source", "tenant_id", "dataset_id", "visibility")
# 1 when a chunk has no role restriction; its allowed roles are terms of `allowed_roles`.
ROLES_OPEN = "roles_open"
VERSION_FIELDS = ("valid_from_seq", "valid_to_seq")
_MAX_SEQ = 2**62


DOCUMENT_KEY = "document_key"
_KEY_BYTES = 6
# A whitelist of up to this many documents goes as SHOULD term queries, past it as a term
# set: tantivy's term set walks each segment's term dictionary along the sorted values,
# which costs more than a term lookup each for few (text + 50 keys at 100k chunks: 1.04
# against 1.39 ms; 300: 2.42 / 2.90; 1,000: 4.60 / 4.37; 2026-12-07).
_SHOULD_MAX = 256


def document_key(document_id: str) -> int:
    """The 48-bit key a document's chunks carry (see the module docstring)."""
    digest = hashlib.blake2b(document_id.encode(), digest_size=_KEY_BYTES).digest()
    return int.from_bytes(digest, "big")


class WhitelistKeys:
    """The keys of the latest whitelists, up to `held` keys in all: a whitelist recurs
    while its filter's answer is cached (scope_metadata), and hashing 5,000 ids costs ~3 ms."""

    def __init__(self, held: int) -> None:
        self._capacity = held
        self._held = 0
        self._found: OrderedDict[frozenset[str], frozenset[int]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, document_ids: frozenset[str]) -> frozenset[int]:
        with self._lock:
            found = self._found.get(document_ids)
            if found is not None:
                self._found.move_to_end(document_ids)
                return found
        found = frozenset(document_key(d) for d in document_ids)
        with self._lock:
            if document_ids not in self._found and len(found) <= self._capacity:
                self._found[document_ids] = found
                self._held += len(found)
                while self._held > self._capacity:
                    self._held -= len(self._found.popitem(last=False)[1])
        return found


# document_keys(ids): the keys of a whitelist's documents
document_keys = WhitelistKeys(held=200_000)


METADATA = "metadata"
METADATA_FINGERPRINT = "metadata_fp"


def schema(keyed: bool = True, terms: bool | None = None) -> tantivy.Schema:
    """The schema of a kb index (kb_id is kept so documents stay self-describing); without
    `keyed`, that of an index built before the document key; with `keyed` but not `terms`
    (the default for keyed), one built before metadata terms (bm25_terms.py)."""
    terms = keyed if terms is None else terms
    if terms and not keyed:
        raise ValueError("an index holding metadata terms holds document keys too")
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("document_id", stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("kb_id", *SCOPE_FIELDS, "allowed_roles"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    for name in (ROLES_OPEN, *VERSION_FIELDS):
        builder.add_integer_field(name, indexed=True)
    # The analyzer already lowercased and segmented the text; tantivy only splits on spaces.
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    if keyed:  # last, so the fields before it keep the numbers older indexes gave them
        # fast with the terms: a chunk's key beside its metadata fingerprint, read per commit
        builder.add_unsigned_field(DOCUMENT_KEY, indexed=True, fast=terms)
    if terms:
        builder.add_text_field(METADATA, tokenizer_name="raw", index_option="basic")
        builder.add_unsigned_field(METADATA_FINGERPRINT, fast=True)
    return builder.build()


def document(
    record: IndexRecord, analyze: Callable[[str], list[str]] | None = None,
    tokens: str | None = None, keyed: bool = True, terms: bool | None = None,
) -> tantivy.Document:
    """The tantivy document of one chunk: its text pre-tokenized by `analyze`, or `tokens`."""
    if tokens is None:
        if analyze is None:
            raise ValueError("document() needs an analyzer or the tokens")
        tokens = " ".join(analyze(record.text))
    fields: dict[str, str] = {
        "chunk_id": record.chunk_id,
        "document_id": record.document_id,
        "kb_id": record.kb_id,
        "text": tokens,
    }
    # A None scope value is left out rather than stored as a sentinel, so no filter value
    # (not even an empty string or a look-alike sentinel) can ever match it.
    for name in SCOPE_FIELDS:
        value = getattr(record, name)
        if value is not None:
            fields[name] = value
    doc = tantivy.Document(**fields)
    for role in record.allowed_roles:
        doc.add_text("allowed_roles", role)
    doc.add_integer(ROLES_OPEN, 0 if record.allowed_roles else 1)
    doc.add_integer("valid_from_seq", record.valid_from_seq)
    doc.add_integer("valid_to_seq", record.valid_to_seq)
    if keyed:
        doc.add_unsigned(DOCUMENT_KEY, document_key(record.document_id))
    if keyed if terms is None else terms:
        for token in record.metadata_tokens:
            doc.add_text(METADATA, token)
        doc.add_unsigned(METADATA_FINGERPRINT, fingerprint(record.metadata_tokens))
    return doc


def roles_clause(schema_: tantivy.Schema, roles: frozenset[str]) -> Query:
    """Chunks without a role restriction, or allowed to one of `roles` (term queries only)."""
    unrestricted = Query.term_query(schema_, ROLES_OPEN, 1)
    if not roles:  # a caller without roles, every search that names none: one term query
        return unrestricted
    return Query.boolean_query([
        (Occur.Should, unrestricted),
        (Occur.Should, Query.term_set_query(schema_, "allowed_roles", sorted(roles))),
    ])


def version_clause(schema_: tantivy.Schema, version_seq: int) -> Query:
    """Chunks valid in version v: valid_from_seq <= v and (valid_to_seq == 0 or > v)."""
    integer = tantivy.FieldType.Integer
    return Query.boolean_query([
        (Occur.Must, Query.range_query(schema_, "valid_from_seq", integer, 0, version_seq)),
        (Occur.Must, Query.boolean_query([
            (Occur.Should, Query.term_query(schema_, "valid_to_seq", 0)),
            (Occur.Should, Query.range_query(schema_, "valid_to_seq", integer,
                                             version_seq + 1, _MAX_SEQ)),
        ])),
    ])


@dataclass(frozen=True)
class Restrictions:
    """A filter's clauses; the roles clause apart, because it restricts only an index that
    holds a role-restricted chunk.

    On an index without one (most: roles are optional), the roles clause keeps every chunk
    yet turned the text disjunction into an intersection with a filter, which cost BM25 1.7x
    at 100k chunks (docs/benchmarks.md). The facts re-check the roles of every hit either
    way.
    """

    clauses: tuple[Query, ...]
    roles: Query | None = None
    # documents left out (a filter's complement): a MUST_NOT beside the text, which the
    # disjunction skips by seeking, where a MUST of "all but these" scanned every chunk
    excluded: Query | None = None
    # the whitelist sent as document keys, which the hits are re-checked against
    documents: frozenset[str] | None = None

    def on(self, searcher: tantivy.Searcher) -> list[Query]:
        """The clauses to apply on `searcher`'s snapshot of an index."""
        if self.roles is None or not holds_restricted(searcher):
            return list(self.clauses)
        return [*self.clauses, self.roles]


def holds_restricted(searcher: tantivy.Searcher) -> bool:
    """Whether the snapshot holds a role-restricted chunk. The term's document frequency
    counts deleted documents too, so a restricted chunk deleted but not yet merged away
    keeps the clause: the answer errs only towards filtering."""
    return int(searcher.doc_freq(ROLES_OPEN, 0)) > 0


def filter_clauses(schema_: tantivy.Schema, search_filter: SearchFilter,
                   excluded: frozenset[str] | None = None,
                   keyed: bool = False) -> Restrictions | None:
    """Document and scope restrictions as term-set queries (never parsed text).

    The kb needs no clause, as its index holds nothing else; None when the filter allows
    nothing, Restrictions without clauses when it restricts nothing. `excluded`: documents to
    leave out, in place of the filter's document whitelist (a shorter list; the caller
    re-checks the whitelist). `keyed`: the index holds document keys (module docstring).
    """
    if allows_nothing(search_filter, excluded):
        return None
    clauses: list[Query] = []
    left_out = None
    whitelist = None
    if excluded is not None:
        if excluded:
            left_out = documents_clause(schema_, excluded, keyed)
    elif search_filter.document_ids is not None:
        whitelist = search_filter.document_ids
        clauses.append(documents_clause(schema_, whitelist, keyed))
    for name, values in search_filter.scope_fields().items():
        clauses.append(Query.term_set_query(schema_, name, sorted(values)))
    if search_filter.version_seq is not None:
        clauses.append(version_clause(schema_, search_filter.version_seq))
    roles = None if search_filter.roles is None else roles_clause(schema_, search_filter.roles)
    return Restrictions(tuple(clauses), roles, left_out, whitelist if keyed else None)


def allows_nothing(search_filter: SearchFilter, excluded: frozenset[str] | None = None) -> bool:
    """Whether the filter keeps no chunk whatever the index (an empty whitelist, when no
    complement replaces it, or an empty scope set): filter_clauses answers None for it."""
    if excluded is None and search_filter.document_ids is not None \
            and not search_filter.document_ids:
        return True
    return any(not values for values in search_filter.scope_fields().values())


def documents_clause(schema_: tantivy.Schema, document_ids: frozenset[str],
                     keyed: bool) -> Query:
    """The chunks of `document_ids`: by their keys where the index holds them."""
    field = DOCUMENT_KEY if keyed else "document_id"
    values: list[int] | list[str] = (
        sorted(document_keys(document_ids)) if keyed else sorted(document_ids))
    if not values:
        return Query.empty_query()
    if len(values) <= _SHOULD_MAX:
        return Query.boolean_query([(Occur.Should, Query.term_query(schema_, field, value))
                                    for value in values])
    return Query.term_set_query(schema_, field, values)


def _term(schema_: tantivy.Schema, token: str, weight: float) -> Query:
    query = Query.term_query(schema_, "text", token)
    return query if weight == 1.0 else Query.boost_query(query, weight)


def bm25_query(schema_: tantivy.Schema, terms: Sequence[tuple[str, float]],
               restrictions: Sequence[Query], excluded: Query | None = None) -> Query:
    """Any of `terms` in the text, scored by weight x BM25, among the documents
    `restrictions` allow and `excluded` does not match."""
    text_query = Query.boolean_query(
        [(Occur.Should, _term(schema_, token, weight)) for token, weight in terms]
    )
    if not restrictions and excluded is None:
        return text_query
    # The filter is a MUST clause with a constant score of 0, so it restricts the matches
    # without altering the BM25 score; the text disjunction is a MUST too, so a document
    # must contain at least one query token. A MUST_NOT scores nothing.
    clauses: list[tuple[Occur, Query]] = [(Occur.Must, text_query)]
    if restrictions:
        clauses.append((Occur.Must, Query.const_score_query(
            Query.boolean_query([(Occur.Must, c) for c in restrictions]), 0.0)))
    if excluded is not None:
        clauses.append((Occur.MustNot, excluded))
    return Query.boolean_query(clauses)
