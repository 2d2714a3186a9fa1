"""Bodies of Dify's External Knowledge API (`POST /dify/retrieval`), exactly as Dify sends them.

Dify registers `http://HOST:PORT/dify` as the endpoint and appends `/retrieval`. Fields Dify
may add later are ignored rather than refused (Dify shows any non-200 answer as an error).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragsift.api.dify_conditions import OPERATORS
from ragsift.api.schemas import Text


class DifyModel(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class RetrievalSetting(DifyModel):
    """How many records at most, and the lowest normalised score (0-1) a record may have."""

    top_k: int = Field(ge=1, le=200, description="the most records to return")
    score_threshold: float = Field(
        ge=0.0, le=1.0,
        description="the lowest normalised score (0-1) a record may have; Dify sends 0.0 "
                    "when its score threshold is off",
    )


class Condition(DifyModel):
    """One metadata condition: a field (Dify sends a string; its older docs a list of one)."""

    name: str | list[str] = Field(description="a metadata key, or tenant_id, dataset_id, "
                                              "visibility, source, document_id or filename")
    # a string, so that an operator Dify adds later is answered 3001 naming the known ones
    comparison_operator: str = Field(
        max_length=32, description="one of Dify's operators: " + ", ".join(OPERATORS))
    value: str | int | float | list[str | int | float] | None = None


class MetadataCondition(DifyModel):
    logical_operator: Literal["and", "or"] | None = "and"
    conditions: list[Condition] | None = Field(default=None, max_length=100)


class DifyRetrievalBody(DifyModel):
    """Dify's retrieval request: the knowledge base (a ragsift KB id or name) and the query."""

    knowledge_id: Text = Field(min_length=1, max_length=200,
                               description="the External Knowledge ID: a KB id or name")
    query: Text
    retrieval_setting: RetrievalSetting
    metadata_condition: MetadataCondition | None = None


class DifyRecord(BaseModel):
    """One chunk: its text, normalised score, document title and metadata (always an object)."""

    content: str
    score: float = Field(ge=0.0, le=1.0)
    title: str
    metadata: dict[str, Any]


class DifyRetrievalOut(BaseModel):
    records: list[DifyRecord]


class DifyErrorBody(BaseModel):
    """Dify's error shape: 1001 bad Authorization header, 1002 authorization failed, 2001 no
    such knowledge base; ragsift adds 3001 invalid request, 4001 too many requests, 5001
    internal or upstream failure."""

    error_code: int
    error_msg: str
