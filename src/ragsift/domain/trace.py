"""The record of every retrieval stage (DESIGN section 3)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DegradationCode = Literal[
    "dense_retrieval_failed",
    "sparse_retrieval_failed",
    "second_dense_retrieval_failed",
    "rewrite_failed",
    "rerank_failed",
    "expansion_failed",
    "faq_retrieval_failed",
    "feedback_failed",
    "exact_match_failed",
    "route_classification_failed",
]


class Degradation(BaseModel):
    """A stage that failed while the request went on; recorded, never swallowed."""

    model_config = ConfigDict(frozen=True)

    code: DegradationCode
    reason: str


class QueryVariant(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    # contextual: a follow-up joined with the salient terms of the last user question (no LLM)
    method: Literal["original", "step_back", "hyde", "expand", "translation", "standalone",
                    "contextual"]


class ChannelRun(BaseModel):
    """One channel run for one variant: how many candidates, how long, or why it failed."""

    model_config = ConfigDict(frozen=True)

    list_name: str
    # second_dense: the second model's channel (USE), for cross-lingual queries by default
    channel: Literal["dense", "sparse", "second_dense"]
    variant: str
    candidates: int
    latency_ms: float
    error: str | None = None
    # retries of the model-server call (dense: the query embedding), success or not
    retries: int = 0


class Switches(BaseModel):
    model_config = ConfigDict(frozen=True)

    rewrite: bool = False
    rerank: bool = False
    small2big: bool = False
    auto_merge: bool = False
    consistency: bool = False  # the consistency re-scoring (retrieval/consistency_stage.py)
    feedback: bool = False  # RM3 feedback for the BM25 query (retrieval/feedback_stage.py)


class ScopeTrace(BaseModel):
    """How the document whitelist and scope filters resolved."""

    model_config = ConfigDict(frozen=True)

    document_ids_requested: int = 0
    document_ids_allowed: int | None = None
    # documents whose metadata (and scope fields) pass the request's filter; None: no filter
    filter_documents_matched: int | None = None
    empty_reason: str | None = None


class KbSearchTrace(BaseModel):
    """One knowledge base of a search over several: its version, scope, channels, and how
    many of the returned hits it gave."""

    model_config = ConfigDict(frozen=True)

    kb_id: str
    kb_name: str | None = None
    kb_version: int | None = None
    scope: ScopeTrace = Field(default_factory=ScopeTrace)
    channels: tuple[ChannelRun, ...] = ()
    returned_count: int = 0


class RouteTrace(BaseModel):
    """The plan's route of the message (retrieval/route.py): only `search` searches.

    `decided_by`: the rules, the request (a forced route), or neither (rules off); `faq`
    when a search found a FAQ entry above the direct-answer threshold (route `faq_direct`:
    both searches ran, and chat answers with the entry's own answer)."""

    model_config = ConfigDict(frozen=True)

    route: Literal["chitchat", "handoff", "out_of_scope", "search", "faq_direct"] = "search"
    # llm: the rules were unsure whether a message is in the KB's declared domain
    decided_by: Literal["rules", "request", "default", "faq", "llm"] = "default"
    reason: str | None = None
    kind: Literal["greeting", "thanks", "farewell", "acknowledgement"] | None = None
    language: Literal["zh", "en"] | None = None


StageStatus = Literal["off", "applied", "skipped", "failed"]


class StageTrace(BaseModel):
    """What an optional stage did and why (rewrite, rerank, auto-merge, Small2Big, FAQ)."""

    model_config = ConfigDict(frozen=True)

    status: StageStatus = "off"
    reason: str | None = None
    detail: dict[str, float | int | str] = Field(default_factory=dict)
    # retries of the stage's model-server call (rewrite, rerank), success or not
    retries: int = 0


class RetrievalTrace(BaseModel):
    model_config = ConfigDict(frozen=True)

    request_id: str
    kb_id: str
    # the knowledge-base version searched (None: the KB has no versions)
    kb_version: int | None = None
    query: str
    route: RouteTrace = Field(default_factory=RouteTrace)
    mode: Literal["dense", "sparse", "hybrid"]
    fusion: Literal["rrf", "weighted", "zscore"]
    switches_requested: Switches = Field(default_factory=Switches)
    switches_applied: Switches = Field(default_factory=Switches)
    variants: tuple[QueryVariant, ...] = ()
    channels: tuple[ChannelRun, ...] = ()
    scope: ScopeTrace = Field(default_factory=ScopeTrace)
    tuned_fusion: StageTrace = Field(default_factory=StageTrace)
    # a short BM25 list normalised as if channel_k long (fusion.Padding), and the exact-match
    # lane: the rare query terms and the candidates it put first (retrieval/exact_match.py)
    fusion_padding: StageTrace = Field(default_factory=StageTrace)
    exact_match: StageTrace = Field(default_factory=StageTrace)
    fused_count: int = 0
    ready_filtered_count: int = 0
    rewrite: StageTrace = Field(default_factory=StageTrace)
    # the conversation's part: whether the message was searched as a follow-up, and how
    history: StageTrace = Field(default_factory=StageTrace)
    auto_merge: StageTrace = Field(default_factory=StageTrace)
    consistency: StageTrace = Field(default_factory=StageTrace)
    feedback: StageTrace = Field(default_factory=StageTrace)  # RM3 of the BM25 query
    rerank: StageTrace = Field(default_factory=StageTrace)
    threshold: StageTrace = Field(default_factory=StageTrace)
    small2big: StageTrace = Field(default_factory=StageTrace)
    faq: StageTrace = Field(default_factory=StageTrace)
    returned_count: int = 0
    degradations: tuple[Degradation, ...] = ()
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # a search over several KBs: each KB's part, and the KB of every returned hit (chunk id
    # -> KB id); empty for a one-KB search
    kbs: tuple[KbSearchTrace, ...] = ()
    hit_kbs: dict[str, str] = Field(default_factory=dict)
