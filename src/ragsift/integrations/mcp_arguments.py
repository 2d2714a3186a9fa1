"""The arguments of the MCP tools (mcp_tools.py): their JSON schemas are what clients see."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

Query = Annotated[str, Field(
    description="The question or keywords, Chinese or English. Empty or over-long queries "
                "(RAGSIFT_MAX_QUERY_CHARS, 1000 by default) are refused.")]
KbArg = Annotated[str | None, Field(
    description="Knowledge base name (see list_knowledge_bases); may be left out when only one "
                "is visible.")]
KbsArg = Annotated[list[str] | None, Field(
    min_length=1, max_length=64,
    description="Several knowledge bases (names) searched with one ranking, instead of `kb`; "
                "each result names its knowledge base.")]
TopK = Annotated[int | None, Field(ge=1, le=50, description="How many results [5].")]
ModeArg = Annotated[Literal["dense", "sparse", "hybrid"] | None, Field(
    description="dense (embeddings), sparse (BM25 keywords, exact codes) or hybrid [hybrid].")]
FusionArg = Annotated[Literal["zscore", "weighted", "rrf"] | None, Field(
    description="How hybrid search fuses the two lists [zscore].")]
DocumentIds = Annotated[list[str] | None, Field(
    max_length=1000, description="Search only these documents (at most 50 ids).")]
Switch = Annotated[bool | None, Field(description="Override the server's default.")]
RerankArg = Annotated[bool | None, Field(
    description="Rerank the candidates [on when a reranker is configured].")]
RewriteArg = Annotated[bool | None, Field(
    description="Let the LLM rewrite the query [on when a chat server is configured].")]
Small2BigArg = Annotated[bool | None, Field(
    description="Add the neighbouring passages to each result as `context` [on].")]
MinScore = Annotated[float | None, Field(
    ge=-1e6, le=1e6, description="Drop results below this score.")]
FaqArg = Annotated[bool | None, Field(description="Also search the FAQ entries [on].")]
Values = Annotated[list[str] | None, Field(max_length=100)]
Roles = Annotated[list[str] | None, Field(
    max_length=100, description="The caller's roles: documents restricted to other roles are "
                                "left out; none given: only unrestricted documents.")]
KbVersion = Annotated[int | None, Field(
    ge=0, le=2**31 - 1, description="Search this retained version instead of the active one.")]
FilterArg = Annotated[dict[str, Any] | None, Field(
    description='A metadata filter, e.g. {"dept": "hr", "year": {"$gte": 2024}}: operators '
                "$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $startswith $endswith, "
                "combined with $and $or $not; results carry each document's metadata.")]
ChunkId = Annotated[str, Field(min_length=1, max_length=200,
                               description="A chunk id from a citation.")]
Window = Annotated[int, Field(ge=0, le=5, description="Neighbouring passages on each side.")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)

