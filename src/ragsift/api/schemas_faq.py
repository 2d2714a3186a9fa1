"""Bodies and answers of the FAQ management routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ragsift.domain.faq import FaqChanges, FaqEntry

ScopeValue = Annotated[str, Field(max_length=200)]


class FaqPageOut(BaseModel):
    """One page of a knowledge base's live FAQ entries, oldest first, within the key's scope."""

    entries: list[FaqEntry]
    total: int = Field(description="live entries within the key's scope, on every page")
    offset: int
    limit: int


class FaqUpdateBody(BaseModel):
    """The fields to change; a field left out keeps its value, null clears source and the
    scope fields, `allowed_roles: []` lets every role see the entry."""

    model_config = ConfigDict(extra="forbid")

    question: Annotated[str, Field(min_length=1, max_length=10_000)] | None = None
    answer: Annotated[str, Field(min_length=1, max_length=100_000)] | None = None
    source: ScopeValue | None = None
    tenant_id: ScopeValue | None = None
    dataset_id: ScopeValue | None = None
    visibility: ScopeValue | None = None
    allowed_roles: list[ScopeValue] | None = Field(default=None, max_length=100)

    def changes(self) -> FaqChanges:
        """The domain update, keeping "left out" apart from "null"."""
        return FaqChanges.model_validate(self.model_dump(exclude_unset=True))
