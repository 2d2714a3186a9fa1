"""Labelled query sets stored with a knowledge base (retrieval testing, issue 38): a labels
JSONL a user saved under a name is checked like an uploaded one, counted, bounded in size
(RAGSIFT_WEB_EVAL_SET_MAX_BYTES) and in number per KB (RAGSIFT_WEB_EVAL_MAX_SETS), and read
back by the evaluation view."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Protocol

from ragsift.domain.errors import InvalidInput
from ragsift.domain.labelled_sets import LabelledSet
from ragsift.evaluation.web_eval import uploaded_lines

MAX_NAME = 200


class LabelledSetStore(Protocol):
    def save_labelled_set(self, entry: LabelledSet, max_sets: int) -> None: ...

    def list_labelled_sets(self, kb_id: str) -> list[LabelledSet]: ...

    def get_labelled_set(self, kb_id: str, set_id: str) -> LabelledSet: ...

    def delete_labelled_set(self, kb_id: str, set_id: str) -> None: ...


def new_labelled_set(
    kb_id: str, name: str, labels: str, key_name: str | None, max_bytes: int
) -> LabelledSet:
    """A set to save; InvalidInput for an empty or long name, a file over `max_bytes`, a bad
    line (named) or no labelled query."""
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise InvalidInput(f"a labelled set's name has 1 to {MAX_NAME} characters")
    size = len(labels.encode("utf-8"))
    if size > max_bytes:
        raise InvalidInput(f"labels of {size} bytes are more than a labelled set may hold "
                           f"(RAGSIFT_WEB_EVAL_SET_MAX_BYTES={max_bytes})")
    lines = uploaded_lines(labels)
    if not lines:
        raise InvalidInput("the labels hold no labelled query")
    return LabelledSet(id=uuid.uuid4().hex, kb_id=kb_id, name=name, labels=labels,
                       queries=len(lines), size_bytes=size, key_name=key_name,
                       created_at=datetime.now(UTC))
