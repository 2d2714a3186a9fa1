"""A search filter's tantivy clauses, built once per filter and reused by every search.

A metadata filter reaches BM25 as a document whitelist (or its complement, see
sparse_complement.py) of up to every document of a kb; its term-set query sorted and built
again each search cost 1.4 ms of CPU at 2,000 documents. The same filters repeat across
searches (a filter's answer is cached upstream and comes back as the same set object), and a
tantivy query holds values only, never index state, so it stays valid across commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_schema import (
    Restrictions,
    allows_nothing,
    filter_clauses,
    schema,
)
from ragsift.adapters.embedded_index.bm25_terms import terms_restrictions
from ragsift.domain.filters import SearchFilter

_CACHED = 64


class FilterClauses:
    """filter_clauses(schema, filter, excluded, keyed), remembered for the last filters asked;
    `keyed`: for an index holding document keys (bm25_schema), else one built before them."""

    def __init__(self) -> None:
        self._schemas = {True: schema(keyed=True), False: schema(keyed=False)}
        self._cache: dict[tuple[SearchFilter, frozenset[str] | None, bool],
                          Restrictions | None] = {}
        # (filter, kb) -> (the kb's fingerprints it was built on, the restrictions by terms)
        self._by_commit: dict[tuple[SearchFilter, KbIndex],
                              tuple[Mapping[int, int], Restrictions | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, search_filter: SearchFilter, excluded: frozenset[str] | None = None,
                 keyed: bool = True) -> Restrictions | None:
        key = (search_filter, excluded, keyed)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        clauses = filter_clauses(self._schemas[keyed], search_filter, excluded, keyed)
        with self._lock:
            if len(self._cache) >= _CACHED:
                self._cache.clear()
            self._cache[key] = clauses
        return clauses

    def for_kb(self, search_filter: SearchFilter, excluded: frozenset[str] | None,
               open_kb: Callable[[], KbIndex | None]) -> tuple[KbIndex, Restrictions] | None:
        """The filter's kb index (`open_kb`) and its clauses for that index's layout; None
        when the kb has no index or the filter allows nothing (then no index is opened)."""
        if allows_nothing(search_filter, excluded):
            return None
        kb = open_kb()
        if kb is None:
            return None
        # a complement or an unrestricted page (`excluded`) asks for no whitelist at all
        restrictions = None if excluded is not None else self._by_terms(search_filter, kb)
        if restrictions is None:
            restrictions = self(search_filter, excluded, kb.keyed)
        return None if restrictions is None else (kb, restrictions)

    def _by_terms(self, search_filter: SearchFilter, kb: KbIndex) -> Restrictions | None:
        """terms_restrictions for the kb's current commit (its stale documents found once
        per filter and commit); None when the filter or the kb has no terms."""
        if search_filter.metadata_terms is None or not kb.terms:
            return None
        indexed = kb.indexed_fingerprints()
        if indexed is None:  # being read by another search
            return None
        key = (search_filter, kb)
        with self._lock:
            cached = self._by_commit.get(key)
        if cached is not None and cached[0] is indexed:
            return cached[1]
        restrictions = terms_restrictions(self._schemas[True], search_filter, indexed)
        with self._lock:
            if len(self._by_commit) >= _CACHED:
                self._by_commit.clear()
            self._by_commit[key] = (indexed, restrictions)
        return restrictions

    def takes_terms(self, search_filter: SearchFilter, open_kb: Callable[[], KbIndex | None]
                    ) -> bool:
        """Whether the filter's metadata part goes to the kb's index as terms (then no
        whitelist complement is worth planning)."""
        if search_filter.metadata_terms is None:
            return False  # no index opened for it
        kb = open_kb()
        return kb is not None and self._by_terms(search_filter, kb) is not None
