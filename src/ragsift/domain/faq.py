"""FAQ entries: curated question/answer pairs searched in their own collection."""

from __future__ import annotations

import hashlib
from datetime import datetime

from pydantic import Field

from ragsift.domain.models import Frozen


class FaqEntry(Frozen):
    """One question with its standard answer; `source` says where the answer comes from."""

    id: str
    kb_id: str
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    source: str | None = None
    created_at: datetime | None = None

    @property
    def sha256(self) -> str:
        """Content hash of question and answer: the same pair is stored once per KB."""
        return faq_sha256(self.question, self.answer)


def faq_sha256(question: str, answer: str) -> str:
    """Hash of the stripped question and answer, with a separator no text contains."""
    payload = f"{question.strip()}\x1f{answer.strip()}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def faq_entry_id(kb_id: str, question: str, answer: str) -> str:
    """Stable id of a question/answer pair in a knowledge base (re-imports map to it)."""
    key = f"{kb_id}:{faq_sha256(question, answer)}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
