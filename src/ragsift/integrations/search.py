"""What the LangChain and LlamaIndex retrievers share: where and how to search, and each hit as
text plus flat metadata.

`RagsiftSearch` holds the server, the key, the knowledge base and the search options (the
fields of the API's SearchBody that make sense for a retriever), validated when it is made, and
runs one search through `ragsift.client`. Nothing here imports LangChain or LlamaIndex.

What a hit becomes (the same in both frameworks):
- its text: the Small2Big context window (the chunk with its neighbours) when Small2Big ran
  for that hit, else the chunk text; `content="chunk"` always gives the chunk text;
- its metadata (`hit_metadata`): ids, file, locator, heading path, a citation label, every
  stage's rank and score, the final score (rerank when it ran, else fused), the calibrated
  `relevance` (0..1; ragsift.retrieval.relevance) and the context window; `chunk_text` is
  always the chunk itself.
- its score, where a framework has one (`framework_score`): `relevance`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from ragsift.client import AsyncRagsiftClient, ClientValidationError, RagsiftClient, RetrievalHit
from ragsift.client.calls import search_body
from ragsift.client.connection import DEFAULT_TIMEOUT_S
from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata_filter import parse_filter
from ragsift.domain.requests import Fusion, Mode
from ragsift.integrations.mcp_results import citation_label

logger = logging.getLogger(__name__)

API_KEY_ENV = "RAGSIFT_API_KEY"

Content = Literal["context", "chunk"]

# the SearchBody fields a retriever passes on (FAQ and doc-channel switches are left out: a
# retriever returns document chunks)
OPTION_FIELDS = (
    "mode", "top_k", "candidate_k", "channel_k", "fusion", "rrf_k", "dense_weight",
    "sparse_weight", "tuned_fusion", "rewrite", "rerank", "small2big", "auto_merge", "min_score",
    "consistency", "feedback", "second_dense", "document_ids", "sources", "tenant_ids",
    "dataset_ids", "visibilities", "roles", "kb_version", "filter", "kbs",
)

# what LlamaIndex shows the chat model of each node besides its text
LLM_METADATA_KEYS = frozenset({"citation"})


def _key_from_env() -> SecretStr | None:
    value = os.environ.get(API_KEY_ENV)
    return SecretStr(value) if value else None


class RagsiftSearch(BaseModel):
    """A ragsift server, a key, one knowledge base and the search options to use on it.

    Give `kb` (the name), `kb_id` or `kbs` (several names or ids searched with one ranking;
    each hit's metadata names its `kb_id`), one of them. `api_key` defaults to
    $RAGSIFT_API_KEY; None sends no key (a `--no-auth` server). Options left as None take
    the server's defaults; they are checked against the API's request model when this is
    made (a ValidationError then), so a typo or an out-of-range `top_k` fails before any
    query.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(description="the server, e.g. http://127.0.0.1:8000")
    api_key: SecretStr | None = Field(default_factory=_key_from_env,
                                      description="a ragsift API key (rs_...)")
    kb: str | None = Field(default=None, description="knowledge base name")
    kb_id: str | None = Field(default=None, description="knowledge base id (instead of kb)")
    kbs: list[str] | None = Field(
        default=None, description="several knowledge bases (names or ids) searched with one "
                                  "ranking, instead of kb / kb_id")
    content: Content = Field(
        default="context",
        description="text of each result: the Small2Big context window when there is one "
                    "('context'), or always the chunk itself ('chunk')",
    )
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, description="seconds per request")
    retries: int = Field(default=3, ge=0, description="retries of 429 and 503 answers")

    # search options (SearchBody's; None = the server's default)
    mode: Mode | None = None
    top_k: int | None = None
    candidate_k: int | None = None
    channel_k: int | None = None
    fusion: Fusion | None = None
    rrf_k: int | None = None
    dense_weight: float | None = None
    sparse_weight: float | None = None
    tuned_fusion: bool | None = None
    rewrite: bool | None = None
    rerank: bool | None = None
    small2big: bool | None = None
    auto_merge: bool | None = None
    min_score: float | None = None
    consistency: bool | None = Field(default=None, description="number/entity re-scoring")
    feedback: bool | None = Field(default=None, description="RM3 feedback for the BM25 query")
    second_dense: bool | None = Field(
        default=None, description="the second dense channel (default: cross-lingual queries)")
    document_ids: list[str] | None = Field(default=None, description="a whitelist of documents")
    sources: list[str] | None = None
    tenant_ids: list[str] | None = None
    dataset_ids: list[str] | None = None
    visibilities: list[str] | None = None
    roles: list[str] | None = Field(default=None, description="the caller's data roles")
    kb_version: int | None = None
    filter: dict[str, Any] | None = Field(
        default=None, description="a metadata filter ({\"dept\": \"hr\", \"year\": "
                                  "{\"$gte\": 2024}}; docs/how-to/metadata-filters.md)")

    @model_validator(mode="after")
    def _valid_search(self) -> RagsiftSearch:
        _check_options(self.kb, self.kb_id, self.search_options())
        return self

    def search_options(self) -> dict[str, Any]:
        """The options that are set, as keywords of `RagsiftClient.search`."""
        values = {name: getattr(self, name) for name in OPTION_FIELDS}
        return {name: value for name, value in values.items() if value is not None}

    def with_options(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """search_options() with per-call `overrides` (search option names) on top, validated
        like the constructor's (a ValueError naming the problem)."""
        unknown = sorted(set(overrides) - set(OPTION_FIELDS))
        if unknown:
            raise ValueError(f"unknown ragsift search options: {', '.join(unknown)} "
                             f"(known: {', '.join(OPTION_FIELDS)})")
        options = {**self.search_options(), **overrides}
        _check_options(*self._kb(options), options)
        return {name: value for name, value in options.items() if value is not None}

    def search_hits(self, query: str, **overrides: Any) -> list[RetrievalHit]:
        """The hits for `query` (RagsiftApiError subclasses on error answers); `overrides`
        are search options for this call only."""
        options = self.with_options(overrides)
        with RagsiftClient(self.base_url, api_key=self._secret(), timeout=self.timeout,
                           retries=self.retries) as client:
            kb, kb_id = self._kb(options)
            hits = client.search(query, kb=kb, kb_id=kb_id, **options)
        logger.debug("ragsift search in %s: %d hits", self.kb or self.kb_id or self.kbs,
                     len(hits))
        return hits

    async def asearch_hits(self, query: str, **overrides: Any) -> list[RetrievalHit]:
        """search_hits with the asyncio client (a fresh one per call: httpx's async client
        belongs to the event loop it first ran on)."""
        options = self.with_options(overrides)
        async with AsyncRagsiftClient(self.base_url, api_key=self._secret(),
                                      timeout=self.timeout, retries=self.retries) as client:
            kb, kb_id = self._kb(options)
            hits = await client.search(query, kb=kb, kb_id=kb_id, **options)
        logger.debug("ragsift search in %s: %d hits", self.kb or self.kb_id or self.kbs,
                     len(hits))
        return hits

    def hit_text(self, hit: RetrievalHit) -> str:
        """The text a framework gets for a hit (see `content`)."""
        return hit_text(hit, self.content)

    def _kb(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """(kb, kb_id) of a search with `options`: none when it names `kbs` (a per-call
        `kbs` replaces the retriever's one KB)."""
        return (None, None) if options.get("kbs") else (self.kb, self.kb_id)

    def _secret(self) -> str | None:
        return None if self.api_key is None else self.api_key.get_secret_value()


def _check_options(kb: str | None, kb_id: str | None, options: Mapping[str, Any]) -> None:
    """Refuse options the API's request model would refuse, and a filter outside the filter
    language's grammar (ValueError naming each)."""
    try:
        search_body("probe", kb, kb_id, options)
        if options.get("filter") is not None:
            parse_filter(options["filter"])
    except ClientValidationError as exc:
        raise ValueError(f"invalid ragsift search options: {exc.message}") from None
    except InvalidInput as exc:
        raise ValueError(f"invalid ragsift metadata filter: {exc}") from None


def rename_count(values: Any, alias: str) -> Any:
    """Constructor keywords with a framework's name for the result count (`alias`, e.g. `k`)
    moved to `top_k`; both given with different values is refused."""
    if not isinstance(values, dict) or alias not in values:
        return values
    renamed = dict(values)
    count = renamed.pop(alias)
    if renamed.get("top_k") is not None and count is not None and renamed["top_k"] != count:
        raise ValueError(f"{alias}={count!r} and top_k={renamed['top_k']!r} disagree; "
                         f"give one ({alias} is an alias of top_k)")
    if count is not None:
        renamed["top_k"] = count
    return renamed


def final_score(hit: RetrievalHit) -> float:
    """The score the hit was finally ordered by: rerank when it ran, else fused."""
    return hit.rerank_score if hit.rerank_score is not None else hit.fusion_score


def framework_score(hit: RetrievalHit) -> float:
    """The score a framework gets (similarity cut-offs, thresholds assume 0..1): the hit's
    calibrated `relevance`, or its final score from a server too old to send one."""
    return final_score(hit) if hit.relevance is None else hit.relevance


def hit_text(hit: RetrievalHit, content: Content = "context") -> str:
    """The Small2Big context window when it ran for the hit (and `content` wants it), else the
    chunk text."""
    if content == "context" and hit.context_text:
        return hit.context_text
    return hit.text


def hit_metadata(hit: RetrievalHit) -> dict[str, Any]:
    """Everything ragsift knows of a hit, as JSON values (lists, not tuples)."""
    return {
        "chunk_id": hit.chunk_id,
        "document_id": hit.document_id,
        "kb_id": hit.kb_id,
        "parent_id": hit.parent_id,
        "filename": hit.filename,
        "heading_path": list(hit.heading_path),
        "locator": hit.locator.model_dump(exclude_none=True),
        "citation": citation_label(hit.filename, hit.heading_path, hit.locator),
        "rank": hit.rank,
        "dense_rank": hit.dense_rank,
        "dense_score": hit.dense_score,
        "sparse_rank": hit.sparse_rank,
        "sparse_score": hit.sparse_score,
        "second_dense_rank": hit.second_dense_rank,
        "second_dense_score": hit.second_dense_score,
        "fusion_score": hit.fusion_score,
        "rerank_score": hit.rerank_score,
        "final_score": final_score(hit),
        "relevance": hit.relevance,
        "retrieval_sources": list(hit.retrieval_sources),
        "merged_from": list(hit.merged_from),
        "chunk_text": hit.text,
        "context_text": hit.context_text,
        "context_chunk_ids": list(hit.context_chunk_ids),
        "document_metadata": dict(hit.metadata or {}),
    }
