"""What the audit log records of a state-changing request."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class AuditEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    key_name: str | None  # None when auth is off
    method: str
    route: str  # the route template, e.g. DELETE /api/documents/{document_id}
    target: str | None  # the ids in the path
    status: int
