"""The language of each chunk a channel found, to keep one language's chunks of a list.

In a KB that mixes Chinese and English, the second dense channel (USE multilingual) is
searched for the query's other language only: its same-language hits are what e5 and BM25
already rank better, and fused at a cross-lingual weight they would push those down
(docs/quality.md, "Questions across languages in a mixed KB"). A chunk's language is read
from its text once and remembered (chunk ids are never reused for another text).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ragsift.domain.results import ChannelHit
from ragsift.ports import Repository
from ragsift.retrieval.cross_lingual import Language, cjk_share, language_of


class ChunkLanguages:
    """Chunk id -> language, read from the repository on a miss; the last `capacity` kept."""

    def __init__(self, repository: Repository, capacity: int = 200_000) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self._repository = repository
        self._capacity = capacity
        self._known: OrderedDict[str, Language | None] = OrderedDict()
        self._lock = threading.Lock()

    def languages(self, chunk_ids: Sequence[str]) -> dict[str, Language | None]:
        """Each chunk's language (None: neither script, or an unknown chunk); one repository
        read for the chunks not seen before."""
        found: dict[str, Language | None] = {}
        with self._lock:
            for chunk_id in chunk_ids:
                if chunk_id in self._known:
                    self._known.move_to_end(chunk_id)
                    found[chunk_id] = self._known[chunk_id]
        missing = [chunk_id for chunk_id in chunk_ids if chunk_id not in found]
        if missing:
            read: dict[str, Language | None] = {}
            for chunk in self._repository.get_chunks(missing):
                share = cjk_share(chunk.text)
                read[chunk.id] = None if share is None else language_of(share)
            found.update({chunk_id: read.get(chunk_id) for chunk_id in missing})
            with self._lock:  # an unknown chunk is not remembered: it may be written later
                self._known.update(read)
                while len(self._known) > self._capacity:
                    self._known.popitem(last=False)
        return found

    def keep(self, hits: Sequence[ChannelHit], language: Language) -> list[ChannelHit]:
        """The hits whose chunk is written in `language`, in their order."""
        of = self.languages([hit.chunk_id for hit in hits])
        return [hit for hit in hits if of.get(hit.chunk_id) == language]
