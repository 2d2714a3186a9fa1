"""Scope: the document whitelist (at most N ids, intersected with READY documents) and the
compilation of a request's scope into the typed SearchFilter."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ragsift.domain.errors import InvalidInput
from ragsift.domain.filters import SearchFilter
from ragsift.domain.metadata_terms import MetadataTerms
from ragsift.domain.requests import SearchRequest
from ragsift.domain.trace import ScopeTrace


def check_document_ids(document_ids: Sequence[str] | None, limit: int) -> tuple[str, ...] | None:
    """Deduplicated whitelist, or InvalidInput when it names more than `limit` documents."""
    if document_ids is None:
        return None
    unique = tuple(dict.fromkeys(document_ids))
    if len(unique) > limit:
        raise InvalidInput(f"at most {limit} document ids per request, got {len(unique)}")
    if any(not doc_id.strip() for doc_id in unique):
        raise InvalidInput("document ids must not be empty")
    return unique


@dataclass(frozen=True, slots=True)
class ScopeDecision:
    allowed: frozenset[str] | None
    trace: ScopeTrace


def resolve_whitelist(
    requested: Sequence[str] | None, ready: Collection[str]
) -> ScopeDecision:
    """Keep the requested ids that are READY; an empty result says why in the trace."""
    if requested is None:
        return ScopeDecision(None, ScopeTrace())
    allowed = frozenset(doc_id for doc_id in requested if doc_id in ready)
    reason = None
    if not allowed:
        reason = (
            f"none of the {len(requested)} requested documents is READY in this knowledge base"
        )
    return ScopeDecision(
        allowed,
        ScopeTrace(
            document_ids_requested=len(requested),
            document_ids_allowed=len(allowed),
            empty_reason=reason,
        ),
    )


def _frozen(values: Sequence[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


def compile_filter(
    request: SearchRequest, allowed_documents: frozenset[str] | None, version_seq: int | None,
    metadata_terms: MetadataTerms | None = None,
) -> SearchFilter:
    """The request's scope (tenant, dataset, visibility, roles, source), the resolved document
    whitelist (and the metadata filter it answers, as terms) and the version read at the start
    of the request, as the one typed filter.

    Roles fail closed: a request that names none is a caller without roles, who sees only
    unrestricted chunks and FAQ entries (never None, "every role", from a request)."""
    return SearchFilter(
        kb_id=request.kb_id, document_ids=allowed_documents,
        sources=_frozen(request.sources), tenant_ids=_frozen(request.tenant_ids),
        dataset_ids=_frozen(request.dataset_ids), visibilities=_frozen(request.visibilities),
        roles=frozenset(request.roles or ()), version_seq=version_seq,
        metadata_terms=metadata_terms,
    )
