"""Cross-lingual queries: the script of a query against the script most of a KB is written in.

A query whose script covers little of the KB (an English question over a Chinese handbook)
matches BM25 on nothing and dense only weakly, so the rewrite stage is asked for one
translated variant instead of a same-language rewrite. The KB's script is estimated from a
small sample of its chunks, cached per KB for a while: cheap enough to consult every search.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.ports import Repository

Language = Literal["zh", "en"]  # the translation targets: CJK text and Latin-script text

# One unit per CJK character (a Chinese word is one or two of them) and one per Latin word,
# so a Chinese and an English text of the same content count about alike.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")


def cjk_share(text: str) -> float | None:
    """Share of CJK units among CJK characters and Latin words; None without either."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    return None if cjk + latin == 0 else cjk / (cjk + latin)


def language_of(share: float) -> Language:
    return "zh" if share >= 0.5 else "en"


def translation_target(
    query_share: float | None, kb_share: float | None, min_share: float
) -> Language | None:
    """The language to translate the query into, or None when the KB is mostly in its script.

    `min_share`: the least share of the KB's text in the query's script that needs no
    translation (0.5: translate when most of the KB is in the other script).
    """
    if query_share is None or kb_share is None:
        return None
    language = language_of(query_share)
    in_query_script = kb_share if language == "zh" else 1.0 - kb_share
    if in_query_script >= min_share:
        return None
    return "en" if language == "zh" else "zh"


@dataclass(frozen=True, slots=True)
class CrossLingual:
    """The decision for one query, recorded in the rewrite stage's trace."""

    target: Language | None
    query_share: float | None
    kb_share: float | None

    def detail(self) -> dict[str, float | int | str]:
        detail: dict[str, float | int | str] = {}
        if self.query_share is not None:
            detail["query_cjk_share"] = round(self.query_share, 3)
        if self.kb_share is not None:
            detail["kb_cjk_share"] = round(self.kb_share, 3)
        if self.target is not None:
            detail["translate_to"] = self.target
        return detail


class KbScripts:
    """The CJK share of each KB's text, from a sample of READY documents, cached for `ttl_s`."""

    def __init__(
        self, repository: Repository, sample_documents: int, sample_chars: int, ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repository = repository
        self._documents = sample_documents
        self._chars = sample_chars
        self._ttl_s = ttl_s
        self._clock = clock
        self._cache: dict[str, tuple[float, float | None]] = {}
        self._lock = threading.Lock()

    def share(self, kb_id: str) -> float | None:
        """The KB's CJK share (None: no text yet); sampled at most once per `ttl_s`."""
        now = self._clock()
        with self._lock:
            cached = self._cache.get(kb_id)
        if cached is not None and now - cached[0] < self._ttl_s:
            return cached[1]
        share = cjk_share(self._sample(kb_id))
        with self._lock:
            self._cache[kb_id] = (now, share)
        return share

    def _sample(self, kb_id: str) -> str:
        documents = self._repository.list_documents(kb_id, DocumentStatus.READY)
        if not documents:
            return ""
        step = max(1, len(documents) // self._documents)  # spread over the KB, not its start
        parts: list[str] = []
        for document in documents[::step][: self._documents]:
            chunks = self._repository.list_chunks(document.id)
            text = "\n".join(c.text for c in chunks if c.level == CHILD_LEVEL)
            parts.append(text[: self._chars])
        return "\n".join(parts)

    async def decide(self, kb_id: str, query: str, min_share: float) -> CrossLingual:
        """Whether `query` should be translated for `kb_id`, and into which language."""
        query_share = cjk_share(query)
        if query_share is None:
            return CrossLingual(None, None, None)
        kb_share = await asyncio.to_thread(self.share, kb_id)
        return CrossLingual(
            translation_target(query_share, kb_share, min_share), query_share, kb_share
        )
