"""The bodies of the texts-by-key routes (routes_texts), shared with the client."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_TEXTS = 100
MAX_KEYS = 200


class TextIn(BaseModel):
    """One text to store under `key` (its document's metadata replaced by `metadata`)."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=1024, description="the caller's id of the text")
    text: str = Field(min_length=1, description="the text (stored and searched as plain text)")
    metadata: dict[str, Any] = Field(default_factory=dict,
                                     description="the document's metadata (JSON types)")


class TextsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    texts: list[TextIn] = Field(min_length=1, max_length=MAX_TEXTS)


class TextOut(BaseModel):
    """A stored text: its key, document, status, text as stored and metadata."""

    key: str
    document_id: str
    status: str
    replacing: bool
    text: str
    metadata: dict[str, Any]


class DeletedOut(BaseModel):
    deleted: list[str] = Field(description="the keys whose documents were deleted")
