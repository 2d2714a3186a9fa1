"""Request and response bodies of the API (pydantic models, part of the OpenAPI document)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from ragsift.domain.models import DocumentStatus, Locator
from ragsift.domain.requests import Fusion, HistoryMessage, Mode, RouteChoice, SearchRequest
from ragsift.domain.results import FaqHit, RetrievalHit
from ragsift.domain.trace import RetrievalTrace


def _utf8(value: str) -> str:
    """Reject lone surrogates (valid JSON escapes, but not storable text)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from exc
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    return value


Text = Annotated[str, AfterValidator(_utf8)]
Name = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(_utf8),
]
Id = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_utf8)]
Weight = Annotated[float, Field(ge=0, le=1000)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class KbCreate(Body):
    """A new knowledge base; it takes the configured embedder."""

    name: Name


class KbOut(BaseModel):
    """A knowledge base with its document and FAQ counts."""

    id: str
    name: str
    embedding_model: str
    embedding_dim: int
    created_at: datetime | None
    documents: int
    ready: int
    faq: int


class UploadedDocument(BaseModel):
    """One file of an upload: the document it became, or the live duplicate it matched."""

    id: str
    filename: str
    status: DocumentStatus
    duplicate: bool
    error: str | None = None
    key: str | None = None
    # the file replaces the document of its key (the old content stays searchable meanwhile)
    replacing: bool = False
    # a duplicate whose own metadata differs from the upload's was left as it was (send
    # replace=true, or PATCH the document, to change it)
    metadata_ignored: bool = False


class DocumentPatch(Body):
    """A change of a document that needs no re-embedding: its metadata."""

    metadata: dict[str, Any] = Field(
        description="merged into the document's metadata (a key set to null is removed); "
        "values: string, number, boolean, list of strings, {\"$date\": \"YYYY-MM-DD\"}, "
        "{\"$datetime\": \"ISO 8601\"}")
    replace: bool = Field(default=False,
                          description="replace the whole metadata instead of merging")


class ChunkOut(BaseModel):
    """One chunk of a document, as stored."""

    id: str
    level: int
    parent_id: str | None
    ordinal: int
    heading_path: tuple[str, ...]
    locator: Locator
    token_count: int
    text: str
    asset_ids: tuple[str, ...] = ()  # its images: GET /api/assets/{id}


class ChunkPage(BaseModel):
    total: int
    offset: int
    chunks: list[ChunkOut]
    # of `total`: the pieces in the search index (what `ragsift ingest` reports as "indexed
    # chunks") and the sections they belong to (stored for context, not searched)
    indexed: int = 0
    sections: int = 0


class UploadOut(BaseModel):
    documents: list[UploadedDocument]


class FaqImportOut(BaseModel):
    """Rows read from the file, pairs added, and pairs skipped as already held or repeated."""

    rows: int
    added: int
    duplicates: int


class SearchBody(Body):
    """A retrieval request: `kb_id` or `kb` (its name), the query, and optional overrides."""

    kb_id: Id | None = None
    kb: Name | None = Field(default=None, description="knowledge base name (instead of kb_id)")
    kbs: list[Text] | None = Field(
        default=None, min_length=1, max_length=64,
        description="several knowledge bases (names or ids, at most RAGSIFT_SEARCH_MAX_KBS) "
        "searched with one ranking, instead of kb_id / kb; every hit names its kb_id")
    query: Text = Field(description="the question; empty or over-long queries are rejected")
    mode: Mode | None = None
    top_k: int | None = Field(default=None, ge=1, le=200)
    candidate_k: int | None = Field(default=None, ge=1, le=1000)
    channel_k: int | None = Field(default=None, ge=1, le=1000)
    fusion: Fusion | None = None
    rrf_k: int | None = Field(default=None, ge=1, le=100_000)
    dense_weight: Weight | None = None
    sparse_weight: Weight | None = None
    tuned_fusion: bool | None = Field(
        default=None, description="use the fusion fitted to this KB by `ragsift tune`"
    )
    rewrite: bool | None = None
    rerank: bool | None = None
    small2big: bool | None = None
    auto_merge: bool | None = None
    consistency: bool | None = Field(
        default=None, description="penalise candidates whose numbers contradict the query"
    )
    feedback: bool | None = Field(
        default=None, description="RM3 expansion of the BM25 query from the top hits"
    )
    second_dense: bool | None = Field(
        default=None, description="search the second dense channel (USE multilingual); "
        "default: only for a query in a script little of the KB is written in",
    )
    min_score: float | None = Field(default=None, ge=-1e6, le=1e6)
    run_doc: bool | None = None
    run_faq: bool | None = None
    route: RouteChoice | None = Field(
        default=None, description="auto (default): the plan's rules return no hits for a "
        "greeting, thanks, a request for a person or, for a KB with a declared domain "
        "(RAGSIFT_KB_DOMAINS), a message outside it (the trace's `route` says why); "
        "search: search anyway")
    history: list[HistoryMessage] | None = Field(
        default=None, max_length=40,
        description="the conversation so far, oldest first ({role: user|assistant, content}): "
        "a follow-up is searched with it (RAGSIFT_HISTORY_AWARE)")
    faq_top_k: int | None = Field(default=None, ge=1, le=50)
    document_ids: list[Id] | None = Field(default=None, max_length=1000)
    sources: list[Text] | None = Field(default=None, max_length=100)
    tenant_ids: list[Text] | None = Field(default=None, max_length=100)
    dataset_ids: list[Text] | None = Field(default=None, max_length=100)
    visibilities: list[Text] | None = Field(default=None, max_length=100)
    roles: list[Text] | None = Field(
        default=None, max_length=100,
        description="the caller's roles: chunks and FAQ entries restricted to other roles are "
                    "not searched; none given: only unrestricted ones (scoping, not "
                    "authentication: the deployment decides what to pass)",
    )
    kb_version: int | None = Field(
        default=None, ge=0, le=2**31 - 1,
        description="search this retained version of the knowledge base instead of the "
                    "active one (debugging, A/B); the trace records the version searched",
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description="a metadata filter ($eq $ne $in $nin $gt $gte $lt $lte $exists $contains "
        "$and $or $not; docs/how-to/metadata-filters.md), ANDed with the scope above")

    @model_validator(mode="after")
    def _one_kb(self) -> SearchBody:
        if sum(ref is not None for ref in (self.kb_id, self.kb, self.kbs)) != 1:
            raise ValueError("give exactly one of kb_id, kb and kbs")
        if self.dense_weight == 0 and self.sparse_weight == 0:
            raise ValueError("dense_weight and sparse_weight cannot both be 0")
        return self

    def to_request(self, kb_id: str, kb_ids: tuple[str, ...] | None = None) -> SearchRequest:
        """The domain request for the resolved knowledge base id (`kb_ids`: those of kbs)."""
        values: dict[str, Any] = self.model_dump(exclude={"kb", "kb_id", "kbs"},
                                                 exclude_none=True)
        for name in ("document_ids", "sources", "tenant_ids", "dataset_ids", "visibilities",
                     "roles"):
            if name in values:
                values[name] = tuple(values[name])
        return SearchRequest(kb_id=kb_id, kb_ids=kb_ids, **values)


class ExplainOut(BaseModel):
    """Document hits, FAQ hits, and the trace of how they were chosen."""

    results: list[RetrievalHit]
    faq: list[FaqHit]
    trace: RetrievalTrace


class HealthOut(BaseModel):
    status: str


class ReadyOut(BaseModel):
    """`ok` when every store answered, `degraded` when a KB's BM25 index cannot be read
    (HTTP 200 still), `unavailable` when a store failed; each check says `ok` or what."""

    status: str
    checks: dict[str, str]
