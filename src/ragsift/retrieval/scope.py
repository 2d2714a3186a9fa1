"""Document whitelist resolution: at most N ids, intersected with READY documents."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ragsift.domain.errors import InvalidInput
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
