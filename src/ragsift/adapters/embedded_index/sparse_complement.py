"""BM25 under a broad document whitelist: an unrestricted page read off, or the shorter
complement filtered on, instead of the whitelist itself.

A metadata filter reaches the indexes as a whitelist of the documents that pass it. When it
keeps most of a kb (`$not shard = 7`: 9,900 of 10,000 documents), tantivy's query over those
documents reads the postings of every one. Two cheaper ways give the same hits:

- an unrestricted page 1.5 / share times longer than asked, keeping the whitelisted hits, when
  the page tells the top exactly (enough whitelisted hits above its floor, no tie at the cut);
  at 100k chunks it costs 0.6-0.85x the complement for filters keeping 80-99 % of a kb and
  less than the whitelist at 50 % (docs/benchmarks.md, 2026-12-07), so it is tried first;
- the documents the whitelist leaves out (those of the kb the dense store holds, minus the
  whitelist), excluded by key, when that list is shorter than the whitelist: the same
  restriction for every chunk of a document the dense store knows.

Exact, not approximate: a chunk of a document the dense store does not know (a crash between
the two stores' writes) passes the exclusion although the whitelist would drop it. Every hit
is therefore checked against the whitelist; when one was dropped from a full page, the page
may lack a whitelisted hit that ranked below it, and the search runs again on the whitelist.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ragsift.adapters.embedded_index.bm25_page import Page, Sift
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit

# From this share of the kb's documents kept by a whitelist, BM25 first runs without the
# whitelist on a page 1.5 / share times longer and keeps the whitelisted hits: at 100k chunks
# and 50 %, 9 ms of CPU against 11.5 for the term set of 5,000 ids (an unrestricted page of 30
# hits: 7.9 ms); at 90 %, 4.3 against 7.5 by the complement of 1,000 documents' keys.
_OVERSAMPLE_SHARE = 0.4
_OVERSAMPLE_MARGIN = 1.5

# search(excluded, limit): BM25 top-`limit` of the filter, restricted by `excluded` in place
# of the filter's whitelist when it is given
Search = Callable[[frozenset[str] | None, int], list[ChannelHit]]
# read_page(fetch, sift): the unrestricted top-`fetch` page sifted (bm25_page.Page)
ReadPage = Callable[[int, Sift], Page]


def by_whitelist(plan: tuple[frozenset[str] | None, float]) -> bool:
    """Whether `plan` searches under the whitelist itself (neither its complement nor an
    oversampled page): where a filter sent as metadata terms does better (bm25_terms.py);
    a broad filter does better by the complement or a page (tantivy intersects the text
    with a union of many long postings otherwise: `year >= 2020`, half a kb, 3.7 CPU-ms
    oversampled against 4.9-5.3 by terms at 100k chunks)."""
    return plan[0] is None and plan[1] < _OVERSAMPLE_SHARE


def search_by_complement(search: Search, search_filter: SearchFilter,
                         plan: tuple[frozenset[str] | None, float],
                         limit: int, read_page: ReadPage | None = None) -> list[ChannelHit]:
    """The hits `search(None, limit)` returns, found by oversampling or through the
    complement where `plan` (DenseMatrixStore.whitelist_plan: the complement when shorter,
    the share of the kb's documents the whitelist keeps) makes either cheaper; the page
    first, the complement when the page cannot tell. `read_page` reads the page sifted by
    key (bm25_page); without it, the page is `search(frozenset(), fetch)` read whole."""
    allowed = search_filter.document_ids
    excluded, share = plan
    if allowed is None or limit <= 0:
        return search(None, limit)
    if share >= _OVERSAMPLE_SHARE:
        found = _oversampled(read_page or _whole_pages(search), allowed, share, limit)
        if found is not None:
            return found
    if excluded is not None:
        hits = search(excluded, limit)
        kept = [hit for hit in hits if hit.document_id in allowed]
        # a short page held every match of the wider restriction, so every whitelisted one
        if len(kept) == len(hits) or len(hits) < limit:
            return kept
    return search(None, limit)


def _oversampled(read_page: ReadPage, allowed: frozenset[str], share: float,
                 limit: int) -> list[ChannelHit] | None:
    """The whitelist's top `limit` from a page of the kb's unrestricted top hits, None when
    the page cannot tell them exactly: too few whitelisted hits, or a tie of scores at the
    cut (the whitelist's own search breaks it by index order)."""
    fetch = math.ceil(limit * _OVERSAMPLE_MARGIN / share)
    page = read_page(fetch, Sift(allowed, limit))
    kept = list(page.hits)
    exhausted = page.length < fetch  # every match is on the page
    if len(kept) == limit and page.next_score is not None \
            and page.next_score == kept[-1].score:
        return None
    if len(kept) == limit and (exhausted or page.floor is None or kept[-1].score > page.floor):
        return kept
    return kept if exhausted else None


def _whole_pages(search: Search) -> ReadPage:
    """A ReadPage reading every hit of `search`'s unrestricted page (no document key)."""
    def read(fetch: int, sift: Sift) -> Page:
        hits = search(frozenset(), fetch)
        kept = [hit for hit in hits if hit.document_id in sift.allowed]
        next_score = kept[sift.read].score if len(kept) > sift.read else None
        return Page(tuple(kept[:sift.read]), next_score, len(hits),
                    hits[-1].score if hits else None)
    return read
