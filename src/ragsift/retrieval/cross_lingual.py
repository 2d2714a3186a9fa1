"""Cross-lingual queries: the script of a query against the script most of a KB is written in.

A query whose script covers little of the KB (an English question over a Chinese handbook)
matches BM25 on nothing and dense only weakly, so the rewrite stage is asked for one
translated variant instead of a same-language rewrite. The KB's script is estimated from a
small sample of its chunks, cached per KB for a while: cheap enough to consult every search.

A KB that mixes both (a Chinese handbook beside an English travel policy) is neither: the
query's script covers much of it, yet the answer may be in the other language's documents.
The sample also counts the documents in each language; when a meaningful share is in the
other language than the query's, the decision names it (`mixed`), and the second dense
channel searches that language's chunks (ragsift.retrieval.chunk_languages).
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


def mixed_language(
    query_share: float | None, zh_documents: float | None, mixed_share: float
) -> Language | None:
    """The other language than the query's when at least `mixed_share` of the KB's sampled
    documents are written in it (`zh_documents`: the share of them mostly in CJK)."""
    if query_share is None or zh_documents is None:
        return None
    language = language_of(query_share)
    other: Language = "en" if language == "zh" else "zh"
    other_share = 1.0 - zh_documents if other == "en" else zh_documents
    return other if other_share > 0 and other_share >= mixed_share else None


@dataclass(frozen=True, slots=True)
class KbLanguages:
    """A KB's sampled text: its CJK share by units, and the share of its sampled documents
    that are mostly CJK (None: no text yet)."""

    cjk_share: float | None
    zh_documents: float | None
    documents: int = 0


@dataclass(frozen=True, slots=True)
class CrossLingual:
    """The decision for one query, recorded in the rewrite stage's trace.

    `target`: the query's script covers little of the KB (translate it; the second dense
    channel searches every chunk); `mixed`: otherwise, the other language that a meaningful
    share of the KB's documents is written in (the second dense channel searches its chunks).
    """

    target: Language | None
    query_share: float | None
    kb_share: float | None
    mixed: Language | None = None
    zh_documents: float | None = None

    def detail(self) -> dict[str, float | int | str]:
        detail: dict[str, float | int | str] = {}
        if self.query_share is not None:
            detail["query_cjk_share"] = round(self.query_share, 3)
        if self.kb_share is not None:
            detail["kb_cjk_share"] = round(self.kb_share, 3)
        if self.zh_documents is not None:
            detail["kb_zh_documents"] = round(self.zh_documents, 3)
        if self.target is not None:
            detail["translate_to"] = self.target
        if self.mixed is not None:
            detail["mixed_kb_other"] = self.mixed
        return detail


class KbScripts:
    """The languages of each KB's text, from a sample of READY documents, cached per KB until
    its version changes or for `ttl_s` (a KB without versions: the TTL alone)."""

    def __init__(
        self, repository: Repository, sample_documents: int, sample_chars: int, ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repository = repository
        self._documents = sample_documents
        self._chars = sample_chars
        self._ttl_s = ttl_s
        self._clock = clock
        # kb_id -> (sampled at, the KB version then, what the sample found)
        self._cache: dict[str, tuple[float, int | None, KbLanguages]] = {}
        self._lock = threading.Lock()

    def share(self, kb_id: str, version: int | None = None) -> float | None:
        """The KB's CJK share (None: no text yet); see languages()."""
        return self.languages(kb_id, version).cjk_share

    def languages(self, kb_id: str, version: int | None = None) -> KbLanguages:
        """The KB's sampled languages; sampled again when `version` differs from the cached
        sample's (an ingest or a delete since) or after `ttl_s`."""
        now = self._clock()
        with self._lock:
            cached = self._cache.get(kb_id)
        if cached is not None and now - cached[0] < self._ttl_s and cached[1] == version:
            return cached[2]
        languages = self._sample(kb_id)
        with self._lock:
            self._cache[kb_id] = (now, version, languages)
        return languages

    def _sample(self, kb_id: str) -> KbLanguages:
        documents = self._repository.list_documents(kb_id, DocumentStatus.READY)
        if not documents:
            return KbLanguages(None, None)
        # evenly spread over the KB (oldest first): a slice step of len // n read only the
        # oldest n documents of a KB of fewer than 2n, all English when those came first
        count = min(self._documents, len(documents))
        picked = [documents[i * len(documents) // count] for i in range(count)]
        parts: list[str] = []
        zh = sampled = 0
        for document in picked:
            chunks = self._repository.list_chunks(document.id)
            text = "\n".join(c.text for c in chunks if c.level == CHILD_LEVEL)[: self._chars]
            parts.append(text)
            share = cjk_share(text)
            if share is not None:
                sampled += 1
                zh += language_of(share) == "zh"
        return KbLanguages(cjk_share("\n".join(parts)),
                           zh / sampled if sampled else None, sampled)

    async def decide(
        self, kb_id: str, query: str, min_share: float, mixed_share: float | None = None,
        version: int | None = None,
    ) -> CrossLingual:
        """Whether `query` should be translated for `kb_id`, and into which language; with
        `mixed_share`, also whether the KB holds that share of documents in the other one."""
        query_share = cjk_share(query)
        if query_share is None:
            return CrossLingual(None, None, None)
        kb = await asyncio.to_thread(self.languages, kb_id, version)
        target = translation_target(query_share, kb.cjk_share, min_share)
        mixed = None if target is not None or mixed_share is None else mixed_language(
            query_share, kb.zh_documents, mixed_share)
        return CrossLingual(target, query_share, kb.cjk_share, mixed, kb.zh_documents)
