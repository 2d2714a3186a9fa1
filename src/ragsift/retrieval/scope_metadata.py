"""A request's metadata filter as a document allow-list: evaluated on the KB's documents
(their metadata and scope fields), then intersected with the request's whitelist.

Metadata belongs to the document and every chunk inherits it, so the set of documents that
pass is the filter in a form every backend already pushes down (SearchFilter.document_ids:
a tantivy term set on `document_id`, the dense stores' allowed rows): no value of the filter
ever reaches a query language, and a metadata change needs no re-indexing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ragsift.domain.filters import SearchFilter, roles_allow
from ragsift.domain.metadata import ROLES_FIELD, Value, decode_metadata
from ragsift.domain.metadata_filter import Node
from ragsift.domain.metadata_predicate import compile_predicate
from ragsift.ports import Repository
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


def in_scope(record: Mapping[str, Value], scope: SearchFilter) -> bool:
    """Whether a document's filter record is within the scope fields and roles of `scope`."""
    for name, accepted in scope.scope_fields().items():
        if record.get(name) not in accepted:
            return False
    roles = record.get(ROLES_FIELD)
    return roles_allow(roles if isinstance(roles, tuple) else (), scope.roles)


def typed_records(fields: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Value]]:
    """filter_fields' JSON form decoded into typed values, per document."""
    return {doc_id: decode_metadata(values) for doc_id, values in fields.items()}


class FilterRecords:
    """Each KB's documents as typed filter records, read and decoded again only when the
    KB's documents changed (Repository.filter_stamp): a search pays one small query."""

    def __init__(self, repository: Repository) -> None:
        self._repository = repository
        self._cache: dict[str, tuple[tuple[int, str | None], Records]] = {}
        self._matched: dict[tuple[str, tuple[int, str | None], str], frozenset[str]] = {}
        self._lock = threading.Lock()

    def matching(self, kb_id: str, node: Node, scope: SearchFilter) -> frozenset[str]:
        """The KB's documents within `scope` (its scope fields and roles) that pass `node`
        (called from a worker thread); the same filter on unchanged documents is answered
        from a cache, as the dense store caches rows."""
        stamp, records = self._records(kb_id)
        # the caller's scope first: what passes is counted in the trace, and a count of
        # documents the caller may not see would tell their metadata
        return frozenset(doc_id for doc_id in self._matching(kb_id, stamp, records, node)
                         if in_scope(records[doc_id], scope))

    def _matching(self, kb_id: str, stamp: tuple[int, str | None], records: Records,
                  node: Node) -> frozenset[str]:
        # keyed by the repr, not the node: true == 1 and false == 0 (same hash) in Python,
        # never in the filter language, so equal nodes could stand for different filters
        key = (kb_id, stamp, repr(node))
        with self._lock:
            found = self._matched.get(key)
        if found is None:
            found = matching_documents(node, records)
            with self._lock:
                if len(self._matched) >= _CACHED_FILTERS:
                    self._matched.clear()
                self._matched[key] = found
        return found

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


def narrow_by_filter(decision: ScopeDecision, matched: frozenset[str]) -> ScopeDecision:
    """The whitelist decision narrowed to the documents the filter matched, traced."""
    allowed = matched if decision.allowed is None else decision.allowed & matched
    trace = decision.trace.model_copy(update={"filter_documents_matched": len(matched)})
    if not allowed and trace.empty_reason is None:
        trace = trace.model_copy(update={
            "empty_reason": "no document of this knowledge base matches the metadata filter"
            if not matched else "no requested document matches the metadata filter"})
    return replace(decision, allowed=allowed, trace=trace)
