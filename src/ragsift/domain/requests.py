"""A retrieval request: the query, the scope, and per-request overrides of the defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["dense", "sparse", "hybrid"]
Fusion = Literal["rrf", "weighted", "zscore"]
# auto: the plan's rules decide; any other value forces that route (search: search anyway)
RouteChoice = Literal["auto", "search", "chitchat", "handoff", "out_of_scope"]


class HistoryMessage(BaseModel):
    """One earlier message of the conversation a request belongs to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str = Field(max_length=20_000)


class SearchRequest(BaseModel):
    """Fields left as None take the service's defaults (config.Settings)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    kb_id: str
    # several KBs searched with one ranking (retrieval/multi_kb.py): their ids, kb_id first;
    # None or one id: kb_id alone
    kb_ids: tuple[str, ...] | None = None
    mode: Mode | None = None
    top_k: int | None = Field(default=None, ge=1, le=200)
    candidate_k: int | None = Field(default=None, ge=1, le=1000)
    channel_k: int | None = Field(default=None, ge=1, le=1000)
    fusion: Fusion | None = None
    rrf_k: int | None = Field(default=None, ge=1)
    dense_weight: float | None = Field(default=None, ge=0)
    sparse_weight: float | None = Field(default=None, ge=0)
    tuned_fusion: bool | None = None
    rewrite: bool | None = None
    rerank: bool | None = None
    small2big: bool | None = None
    auto_merge: bool | None = None
    consistency: bool | None = None  # the consistency re-scoring (RAGSIFT_CONSISTENCY_RESCORING)
    feedback: bool | None = None  # RM3 feedback for the BM25 query (RAGSIFT_PRF_RM3)
    # the second dense channel (USE): None = RAGSIFT_SECOND_DENSE_QUERIES decides per query
    second_dense: bool | None = None
    min_score: float | None = None
    run_doc: bool | None = None
    run_faq: bool | None = None
    route: RouteChoice | None = None  # None: auto unless RAGSIFT_ROUTE_RULES is false
    # the conversation so far, oldest first: a follow-up is searched with it (history-aware)
    history: tuple[HistoryMessage, ...] = Field(default=(), max_length=40)
    faq_top_k: int | None = Field(default=None, ge=1, le=50)
    document_ids: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    tenant_ids: tuple[str, ...] | None = None
    dataset_ids: tuple[str, ...] | None = None
    visibilities: tuple[str, ...] | None = None
    # the caller's roles (None or () = none: only unrestricted content, fail closed), and a
    # retained KB version to search instead of the active one (for debugging or A/B)
    roles: tuple[str, ...] | None = None
    kb_version: int | None = Field(default=None, ge=0)
    # a metadata filter (domain/metadata_filter.py), ANDed with the scope above
    filter: dict[str, Any] | None = None
