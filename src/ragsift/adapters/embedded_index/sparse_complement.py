"""BM25 under a broad document whitelist, filtered on the shorter complement instead.

A metadata filter reaches the indexes as a whitelist of the documents that pass it. When it
keeps most of a kb (`$not shard = 7`: 9,900 of 10,000 documents), tantivy's term-set query
over those ids cost 26 ms of CPU per search where the unfiltered search cost 8
(docs/benchmarks.md, issue 36): it reads the postings of every whitelisted id. The documents
the whitelist leaves out (those of the kb the dense store holds, minus the whitelist) are
the same restriction for every chunk of a document the dense store knows, and BM25 then
excludes 100 ids instead of admitting 9,900.

Exact, not approximate: a chunk of a document the dense store does not know (a crash between
the two stores' writes) passes the exclusion although the whitelist would drop it. Every hit
is therefore checked against the whitelist; when one was dropped from a full page, the page
may lack a whitelisted hit that ranked below it, and the search runs again on the whitelist.
"""

from __future__ import annotations

from collections.abc import Callable

from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit

# search(excluded, limit): BM25 top-`limit` of the filter, restricted by `excluded` in place
# of the filter's whitelist when it is given
Search = Callable[[frozenset[str] | None, int], list[ChannelHit]]


def search_by_complement(search: Search, search_filter: SearchFilter,
                         excluded: frozenset[str] | None, limit: int) -> list[ChannelHit]:
    """The hits `search(None, limit)` returns, found through `excluded` when it is given."""
    allowed = search_filter.document_ids
    if excluded is None or allowed is None:
        return search(None, limit)
    hits = search(excluded, limit)
    kept = [hit for hit in hits if hit.document_id in allowed]
    # a short page held every match of the wider restriction, so every whitelisted one
    if len(kept) == len(hits) or len(hits) < limit:
        return kept
    return search(None, limit)
