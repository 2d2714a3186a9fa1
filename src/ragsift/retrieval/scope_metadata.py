"""A request's metadata filter as a document allow-list: evaluated on the KB's documents
(their metadata and scope fields), then intersected with the request's whitelist.

Metadata belongs to the document and every chunk inherits it, so the set of documents that
pass is the filter in a form every backend already pushes down (SearchFilter.document_ids:
a tantivy term set on `document_id`, the dense stores' allowed rows): no value of the filter
ever reaches a query language, and a metadata change needs no re-indexing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_filter import Node, evaluate
from ragsift.retrieval.scope import ScopeDecision


def matching_documents(node: Node, fields: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
    """The ids of the documents whose fields (document id -> metadata and scope fields, in
    JSON form) pass `node`."""
    return frozenset(doc_id for doc_id, values in fields.items()
                     if evaluate(node, decode_metadata(values)))


def narrow_by_filter(decision: ScopeDecision, matched: frozenset[str]) -> ScopeDecision:
    """The whitelist decision narrowed to the documents the filter matched, traced."""
    allowed = matched if decision.allowed is None else decision.allowed & matched
    trace = decision.trace.model_copy(update={"filter_documents_matched": len(matched)})
    if not allowed and trace.empty_reason is None:
        trace = trace.model_copy(update={
            "empty_reason": "no document of this knowledge base matches the metadata filter"
            if not matched else "no requested document matches the metadata filter"})
    return replace(decision, allowed=allowed, trace=trace)
