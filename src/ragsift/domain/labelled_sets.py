"""Labelled query sets stored with a knowledge base (retrieval testing, issue 38): a labels
JSONL a user saved under a name, so the evaluation view can run on it again without
uploading it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ragsift.domain.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class LabelledSet:
    """A named labels JSONL of one KB: its text, how many labelled queries it holds, its size
    in bytes (UTF-8), the key that saved it (None when auth is off)."""

    id: str
    kb_id: str
    name: str
    labels: str
    queries: int
    size_bytes: int
    key_name: str | None = None
    created_at: datetime | None = None


class LabelledSetExists(InvalidInput):
    """The KB holds a labelled set of that name already (HTTP 409)."""

    code = "labelled_set_exists"


class TooManyLabelledSets(InvalidInput):
    """The KB holds RAGSIFT_WEB_EVAL_MAX_SETS labelled sets already (HTTP 409)."""

    code = "too_many_labelled_sets"
