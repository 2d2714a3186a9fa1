"""A metadata filter as tantivy clauses over the chunks' metadata terms.

An index built with metadata terms (bm25_schema.METADATA) restricts a metadata filter by
the postings of a few terms where a whitelist walks one term per document: at 100k chunks,
`dept = hr` (1,000 documents) cost 3.3 ms of tantivy CPU as document keys and 1.2 as one
term, `$or` of two 4.8 against 2.1 (docs/benchmarks.md).

The terms are those a chunk was indexed with. A document whose metadata changed since (a
PATCH writes only the facts; a crash can leave any mix) has chunks whose fingerprint differs
from its metadata's now: such documents are left out of the terms' answer and admitted by
key when the filter's whitelist holds them; documents the index holds and the facts do not
(a crash between the two writes) are left out by key. So the answer is the whitelist's
exactly (tests/adapters/embedded_index/test_bm25_metadata_terms.py). Past STALE_MAX such
documents the filter goes by its whitelist alone, as on an older index; `ragsift
rebuild-sparse` indexes every document's metadata as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

import tantivy
from tantivy import Occur, Query

from ragsift.adapters.embedded_index.bm25_schema import (
    DOCUMENT_KEY,
    METADATA,
    Restrictions,
    document_key,
    documents_clause,
    filter_clauses,
)
from ragsift.domain.filters import SearchFilter
from ragsift.domain.metadata_terms import (
    AllOf,
    AnyToken,
    Documents,
    NoneOf,
    OneOf,
    TermNode,
)

# changed documents sent by key beside the terms; past it the whitelist is cheaper
STALE_MAX = 500
# tokens of one condition sent as SHOULD term queries, past it as a term set (cheaper for few)
_SHOULD_MAX = 16


def changed_documents(fingerprints: Mapping[str, int], indexed: Mapping[int, int]
                      ) -> tuple[frozenset[str], list[int]]:
    """(documents of `fingerprints` (id -> the fingerprint of their metadata now) whose
    indexed chunks carry other metadata, keys of documents the index holds and the facts do
    not: a crash between the two writes, never in a whitelist), each document's key computed
    once."""
    keys = {document_key(doc_id): doc_id for doc_id in fingerprints}
    stale = frozenset(doc_id for key, doc_id in keys.items()
                      if indexed.get(key, fingerprints[doc_id]) != fingerprints[doc_id])
    return stale, sorted(key for key in indexed if key not in keys)


def terms_restrictions(schema_: tantivy.Schema, search_filter: SearchFilter,
                       indexed: Mapping[int, int]) -> Restrictions | None:
    """The filter's restrictions with its metadata part as terms; None when too many of its
    documents changed since they were indexed (then its whitelist does better)."""
    terms = search_filter.metadata_terms
    assert terms is not None
    stale, unknown = changed_documents(terms.fingerprints, indexed)
    if len(stale) + len(unknown) > STALE_MAX:
        return None
    base = filter_clauses(schema_, search_filter.model_copy(update={"document_ids": None}),
                          keyed=True)
    if base is None:
        return None
    allowed = search_filter.document_ids
    tree: TermNode = terms.tree
    if stale:  # the terms on the rest, the stale ones by key where the whitelist holds them
        tree = OneOf((AllOf((tree, NoneOf(Documents(stale)))),
                      Documents(stale if allowed is None else stale & allowed)))
    # a negation goes beside the text, which skips it by seeking, as do the unknown keys
    must = [] if isinstance(tree, NoneOf) else [term_query(schema_, tree)]
    left_out = [term_query(schema_, tree.part)] if isinstance(tree, NoneOf) else []
    if unknown:
        left_out.append(Query.term_set_query(schema_, DOCUMENT_KEY, unknown))
    excluded = left_out[0] if len(left_out) == 1 else None
    if len(left_out) > 1:
        excluded = Query.boolean_query([(Occur.Should, query) for query in left_out])
    return Restrictions((*base.clauses, *must), base.roles, excluded, allowed)


def term_query(schema_: tantivy.Schema, tree: TermNode) -> Query:
    """`tree` as one tantivy query (never parsed text)."""
    if isinstance(tree, AnyToken):
        return _tokens(schema_, sorted(tree.tokens))
    if isinstance(tree, Documents):
        if not tree.ids:
            return Query.empty_query()
        return documents_clause(schema_, tree.ids, keyed=True)
    if isinstance(tree, NoneOf):
        return Query.boolean_query([(Occur.Must, Query.all_query()),
                                    (Occur.MustNot, term_query(schema_, tree.part))])
    if isinstance(tree, AllOf):
        if not tree.parts:
            return Query.all_query()
        clauses = [(Occur.MustNot, term_query(schema_, part.part)) if isinstance(part, NoneOf)
                   else (Occur.Must, term_query(schema_, part)) for part in tree.parts]
        if all(occur == Occur.MustNot for occur, _ in clauses):
            clauses.append((Occur.Must, Query.all_query()))
        return Query.boolean_query(clauses)
    if not tree.parts:
        return Query.empty_query()
    return Query.boolean_query([(Occur.Should, term_query(schema_, part))
                                for part in tree.parts])


def _tokens(schema_: tantivy.Schema, tokens: list[str]) -> Query:
    if not tokens:
        return Query.empty_query()
    if len(tokens) == 1:
        return Query.term_query(schema_, METADATA, tokens[0])
    if len(tokens) <= _SHOULD_MAX:
        return Query.boolean_query([(Occur.Should, Query.term_query(schema_, METADATA, token))
                                    for token in tokens])
    return Query.term_set_query(schema_, METADATA, tokens)
