"""Knowledge bases, documents and chunks as immutable values."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class DocumentStatus(StrEnum):
    PENDING = "PENDING"
    PARSING = "PARSING"
    INDEXING = "INDEXING"
    READY = "READY"
    FAILED = "FAILED"
    DELETING = "DELETING"
    # Deleted from the KB's draft but kept for older retained versions until collected.
    RETIRED = "RETIRED"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KnowledgeBase(Frozen):
    id: str
    name: str
    embedding_model: str
    embedding_dim: int
    analyzer: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None


class DocumentScope(Frozen):
    """Who a document belongs to; copied onto every chunk so indexes can filter on it."""

    source: str | None = None
    tenant_id: str | None = None
    dataset_id: str | None = None
    visibility: str | None = None
    # Roles that may see the document; empty = no role restriction.
    allowed_roles: tuple[str, ...] = ()

    @property
    def access(self) -> tuple[str | None, str | None, str | None, tuple[str, ...]]:
        """Who may see it: tenant, dataset, visibility and roles (order-free), not the
        source label. Documents with the same bytes and access are duplicates (as FAQ
        entries are: domain/faq.py faq_key)."""
        return (self.tenant_id, self.dataset_id, self.visibility,
                tuple(sorted(set(self.allowed_roles))))


class Document(Frozen):
    id: str
    kb_id: str
    filename: str
    media_type: str
    sha256: str | None
    size: int
    status: DocumentStatus
    error: str | None = None
    category: str | None = None
    scope: DocumentScope = Field(default_factory=DocumentScope)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # the document's stable name in its KB (a path relative to the ingested folder, the
    # upload's filename, or one given): the same key again replaces it (0009)
    key: str | None = None
    # the source file's modification time when ingested or synced (sync compares it first)
    source_mtime: float | None = None
    # a new content is being written into it (the current one stays searchable meanwhile)
    replacing: bool = False
    # what parsing skipped or cut without failing the document (a corrupt image, a cut sheet)
    warnings: tuple[str, ...] = ()


class Revision(Frozen):
    """The facts of a document's content that a replacement changes together."""

    sha256: str
    size: int
    filename: str
    media_type: str
    source_mtime: float | None = None


Box = tuple[float, float, float, float]
"""A rectangle on a page: x0, y0, x1, y1 in PDF points (1/72 inch), origin at the top left."""


class Locator(Frozen):
    """Where a chunk sits in its original: a page (and its lines' boxes), a sheet range, a
    slide, or a record of a JSON file."""

    page: int | None = None
    sheet: str | None = None
    cell_range: str | None = None  # A1 notation, "A1:D9"
    slide: int | None = None
    # the boxes of the chunk's lines on `page`, so a citation can be highlighted there
    boxes: tuple[Box, ...] = ()
    record: int | None = None  # a JSON / JSONL record's index, from 0
    pointer: str | None = None  # its JSON pointer (RFC 6901), "/items/3"


class Chunk(Frozen):
    """A piece of a document. Level 1 = child (L3, indexed), level 0 = parent (L2), level -1 =
    section (L1: a top-level heading's, sheet's, slide's or page's parents together; written
    only where a document has that structure, so two-level documents stay valid)."""

    id: str
    document_id: str
    kb_id: str
    parent_id: str | None
    level: int
    ordinal: int
    heading_path: tuple[str, ...] = ()
    locator: Locator = Field(default_factory=Locator)
    text: str
    token_count: int
    # the images (assets) this chunk's text belongs with
    asset_ids: tuple[str, ...] = ()
    # KB versions the chunk belongs to (valid_to 0 = still valid; 0/0 = every version).
    valid_from_seq: int = 0
    valid_to_seq: int = 0


SECTION_LEVEL = -1
PARENT_LEVEL = 0
CHILD_LEVEL = 1


def chunk_id(document_id: str, level: int, ordinal: int, text: str) -> str:
    """Stable chunk id from document id, position and content hash."""
    content = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    key = f"{document_id}:{level}:{ordinal}:{content}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
