"""A request's metadata filter as a document allow-list: evaluated on the KB's documents
(their metadata and scope fields), then intersected with the request's whitelist.

Metadata belongs to the document and every chunk inherits it, so the set of documents that
pass is the filter in a form every backend already pushes down (SearchFilter.document_ids:
a tantivy term set of document keys, the dense stores' allowed rows, Milvus's escaped ids):
no value of the filter ever reaches a query language, and a metadata change needs no
re-indexing. For a search of the KB as it is now, the filter also goes as terms over the
values the documents hold (`terms`, domain/metadata_terms.py), which a BM25 index holding
metadata terms restricts by at the cost of a few postings.

A search pinned to a KB version (`kb_version`) filters on the metadata that version was sealed
with (VersionReader.version_metadata); the active version reads the current metadata, so a
change shows at once. Scope fields are the documents' current ones in both cases.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, ItemsView, Iterator, Mapping
from dataclasses import replace
from typing import Any

from ragsift.domain.filters import SearchFilter, roles_allow
from ragsift.domain.metadata import ROLES_FIELD, SCOPE_KEYS, Value, decode_metadata
from ragsift.domain.metadata_filter import Node
from ragsift.domain.metadata_predicate import compile_predicate
from ragsift.domain.metadata_terms import (
    Distinct,
    MetadataTerms,
    compile_terms,
    document_tokens,
    fingerprint,
)
from ragsift.ports import Repository, VersionReader
from ragsift.retrieval.scope import ScopeDecision

Records = Mapping[str, Mapping[str, Value]]
# KBs whose decoded documents are kept, and (KB, filter) answers; past it a cache restarts
_CACHED_KBS = 32
_CACHED_FILTERS = 256


def matching_documents(node: Node, records: Records) -> frozenset[str]:
    """The ids of the documents whose typed fields (document id -> metadata and scope
    fields) pass `node` (its compiled predicate: the reference evaluator's semantics)."""
    holds = compile_predicate(node)
    return frozenset(doc_id for doc_id, values in records.items() if holds(values))


def in_scope(record: Mapping[str, Value], fields: Mapping[str, frozenset[str]],
             roles: frozenset[str] | None) -> bool:
    """Whether a document's filter record is within a search filter's scope fields
    (SearchFilter.scope_fields) and `roles`."""
    for name, accepted in fields.items():
        if record.get(name) not in accepted:
            return False
    held = record.get(ROLES_FIELD)
    return roles_allow(held if isinstance(held, tuple) else (), roles)


def _scope_key(scope: SearchFilter) -> tuple[object, ...]:
    """What of `scope` in_scope reads: its scope fields and roles (each set sorted, so the
    key is one whatever the sets' order)."""
    fields = tuple((name, tuple(sorted(values)))
                   for name, values in sorted(scope.scope_fields().items()))
    return fields, None if scope.roles is None else tuple(sorted(scope.roles))


def typed_records(fields: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Value]]:
    """filter_fields' JSON form decoded into typed values, per document."""
    return {doc_id: decode_metadata(values) for doc_id, values in fields.items()}


class FilterRecords:
    """Each KB's documents as typed filter records, read and decoded again only when the
    KB's documents changed (Repository.filter_stamp): a search pays one small query."""

    def __init__(self, repository: Repository, versions: VersionReader | None = None) -> None:
        self._repository = repository
        self._versions = versions
        self._cache: dict[str, tuple[tuple[int, str | None], Records]] = {}
        # (KB, stamp, filter, pinned) -> the documents passing; with the scope's key too,
        # those of them within it (the same object each time: the indexes' caches of a
        # search filter holding it then compare it by identity, not element by element)
        self._matched: dict[tuple[object, ...], frozenset[str]] = {}
        self._sealed: dict[tuple[str, int], Mapping[str, Mapping[str, Any]] | None] = {}
        # (KB, stamp) -> its distinct values and fingerprints; (KB, stamp, filter) -> terms
        self._derived: dict[tuple[object, ...], tuple[Distinct, Mapping[str, int]]] = {}
        self._terms: dict[tuple[object, ...], MetadataTerms] = {}
        self._lock = threading.Lock()

    def terms(self, kb_id: str, node: Node) -> MetadataTerms:
        """`node` as terms over the KB's documents as they are now (not for a pinned
        version: its sealed metadata is in no index), the same object while they are
        unchanged."""
        stamp, records = self._records(kb_id)
        return self._terms_in(kb_id, stamp, records, node)

    def matching_and_terms(self, kb_id: str, node: Node, scope: SearchFilter
                           ) -> tuple[frozenset[str], MetadataTerms]:
        """`matching` (unpinned) and `terms` from one read of the KB's documents."""
        stamp, records = self._records(kb_id)
        return (self._matching_in(kb_id, stamp, records, node, scope, None),
                self._terms_in(kb_id, stamp, records, node))

    def _terms_in(self, kb_id: str, stamp: object, records: Records,
                  node: Node) -> MetadataTerms:
        key = (kb_id, stamp, repr(node))
        with self._lock:
            found = self._terms.get(key)
        if found is not None:
            return found
        distinct, fingerprints = self._derive(kb_id, stamp, records)
        built = MetadataTerms(compile_terms(
            node, distinct, lambda part: matching_documents(part, records)), fingerprints)
        with self._lock:
            if len(self._terms) >= _CACHED_FILTERS:
                self._terms.clear()
            return self._terms.setdefault(key, built)

    def _derive(self, kb_id: str, stamp: object,
                records: Records) -> tuple[Distinct, Mapping[str, int]]:
        with self._lock:
            found = self._derived.get((kb_id, stamp))
        if found is None:
            found = (Distinct(records), Fingerprints(records))
            with self._lock:
                if len(self._derived) >= _CACHED_KBS:
                    self._derived.clear()
                self._derived[(kb_id, stamp)] = found
        return found

    def matching(self, kb_id: str, node: Node, scope: SearchFilter,
                 pinned: int | None = None) -> frozenset[str]:
        """The KB's documents within `scope` (its scope fields and roles) that pass `node`
        (called from a worker thread); the same filter on unchanged documents is answered
        from a cache, as the dense store caches rows. `pinned`: a version the request pins,
        filtered on the metadata it was sealed with."""
        stamp, current = self._records(kb_id)
        return self._matching_in(kb_id, stamp, current, node, scope, pinned)

    def _matching_in(self, kb_id: str, stamp: object, current: Records, node: Node,
                     scope: SearchFilter, pinned: int | None) -> frozenset[str]:
        sealed = self._sealed_metadata(kb_id, pinned)
        if sealed is None:
            pinned = None
        # keyed by the repr, not the node: true == 1 and false == 0 (same hash) in Python,
        # never in the filter language, so equal nodes could stand for different filters
        key = (kb_id, stamp, repr(node), pinned)
        scoped_key = (*key, _scope_key(scope))
        with self._lock:
            scoped = self._matched.get(scoped_key)
        if scoped is not None:
            return scoped
        records = current if sealed is None else with_metadata(current, sealed)
        matched = self._cached(key, lambda: matching_documents(node, records))
        # the caller's scope first: what passes is counted in the trace, and a count of
        # documents the caller may not see would tell their metadata (scope fields are
        # the documents' current ones, pinned or not)
        fields, roles = scope.scope_fields(), scope.roles
        return self._cached(scoped_key, lambda: frozenset(
            doc_id for doc_id in matched if in_scope(current[doc_id], fields, roles)))

    def _cached(self, key: tuple[object, ...],
                compute: Callable[[], frozenset[str]]) -> frozenset[str]:
        with self._lock:
            found = self._matched.get(key)
        if found is None:
            found = compute()
            with self._lock:
                if len(self._matched) >= _CACHED_FILTERS:
                    self._matched.clear()
                found = self._matched.setdefault(key, found)
        return found

    def _sealed_metadata(
        self, kb_id: str, pinned: int | None
    ) -> Mapping[str, Mapping[str, Any]] | None:
        """A pinned version's sealed metadata (a sealed version never changes: cached)."""
        if pinned is None or self._versions is None:
            return None
        with self._lock:
            if (kb_id, pinned) in self._sealed:
                return self._sealed[(kb_id, pinned)]
        sealed = self._versions.version_metadata(kb_id, pinned)
        with self._lock:
            if len(self._sealed) >= _CACHED_KBS:
                self._sealed.clear()
            self._sealed[(kb_id, pinned)] = sealed
        return sealed

    def _records(self, kb_id: str) -> tuple[tuple[int, str | None], Records]:
        # the stamp is read first: a change racing the read below makes the next call reread
        stamp = self._repository.filter_stamp(kb_id)
        with self._lock:
            cached = self._cache.get(kb_id)
        if cached is not None and cached[0] == stamp:
            return cached
        records = typed_records(self._repository.filter_fields(kb_id))
        with self._lock:
            if len(self._cache) >= _CACHED_KBS:
                self._cache.clear()
            self._cache[kb_id] = (stamp, records)
        return stamp, records


# the scope fields and roles filter_fields adds beside the metadata (reserved key names)
_SCOPE_KEYS = SCOPE_KEYS | {ROLES_FIELD}


class Fingerprints(Mapping[str, int]):
    """document id -> the fingerprint of its metadata's tokens, computed on first use (by an
    index holding metadata terms; ~6 us a document) and kept."""

    def __init__(self, records: Records) -> None:
        self._records = records
        self._computed: dict[str, int] | None = None
        self._lock = threading.Lock()

    def _all(self) -> dict[str, int]:
        with self._lock:
            if self._computed is None:
                self._computed = {doc_id: fingerprint(document_tokens(metadata_of(values)))
                                  for doc_id, values in self._records.items()}
            return self._computed

    def __getitem__(self, doc_id: str) -> int:
        return self._all()[doc_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._records)

    def items(self) -> ItemsView[str, int]:
        return self._all().items()


def metadata_of(record: Mapping[str, Value]) -> dict[str, Value]:
    """A filter record's user metadata (its scope fields and roles left out)."""
    return {key: value for key, value in record.items() if key not in _SCOPE_KEYS}


def with_metadata(records: Records, sealed: Mapping[str, Mapping[str, Any]]) -> Records:
    """`records` with each document's metadata replaced by `sealed`'s (none when absent),
    its scope fields kept."""
    return {doc_id: {**decode_metadata(sealed.get(doc_id, {})),
                     **{k: values[k] for k in _SCOPE_KEYS if k in values}}
            for doc_id, values in records.items()}


def narrow_by_filter(decision: ScopeDecision, matched: frozenset[str]) -> ScopeDecision:
    """The whitelist decision narrowed to the documents the filter matched, traced."""
    allowed = matched if decision.allowed is None else decision.allowed & matched
    trace = decision.trace.model_copy(update={"filter_documents_matched": len(matched)})
    if not allowed and trace.empty_reason is None:
        trace = trace.model_copy(update={
            "empty_reason": "no document of this knowledge base matches the metadata filter"
            if not matched else "no requested document matches the metadata filter"})
    return replace(decision, allowed=allowed, trace=trace)
