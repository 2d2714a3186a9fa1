"""FaqService: import, list, read, update and delete the FAQ entries of a knowledge base.

Every change goes into the KB's draft version through the FaqWriter, as document changes go
through the DraftWriter: in auto mode it is searchable at once, in staged mode with the next
activated version. Entry ids derive from the content (question, answer, scope) and the draft
version an entry was written into, so:

- a re-run of an interrupted import writes the same ids (nothing is stored twice);
- an update writes a new entry with a new id and retires the old one, which the retained
  older versions keep answering with until garbage collection removes it; an update that
  changes nothing keeps the entry as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.faq import FaqChanges, FaqEntry, faq_visible
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import DocumentScope, KnowledgeBase
from ragsift.ingestion.embedding import Progress
from ragsift.ingestion.faq_import import FaqImportOutcome, FaqRow, parse_faq_file
from ragsift.ports import Embedder, Repository, SearchIndex
from ragsift.versions.faq_writer import FaqWriter
from ragsift.versions.writer import DraftWriter

logger = logging.getLogger(__name__)

MAX_PAGE = 500


@dataclass(frozen=True, slots=True)
class FaqPage:
    """One page of a KB's live entries (oldest first) and how many there are in all."""

    entries: tuple[FaqEntry, ...]
    total: int
    offset: int
    limit: int | None


class FaqService:
    """The FAQ entries of knowledge bases: facts, FAQ index and KB versions kept together."""

    def __init__(
        self, repository: Repository, index: SearchIndex, embedder: Embedder,
        drafts: DraftWriter, max_file_bytes: int, batch_size: int = 16,
    ) -> None:
        if max_file_bytes < 1:
            raise ValueError("max_file_bytes must be positive")
        self._repository = repository
        self._index = index
        self._writer = FaqWriter(repository, index, embedder, drafts, batch_size)
        self._max_bytes = max_file_bytes

    # ---- import ---------------------------------------------------------------------------

    def read(self, path: Path) -> list[FaqRow]:
        """The rows of one JSONL or CSV file; its size is checked before it is read."""
        if not path.is_file():
            raise InvalidInput(f"no such file: {path}")
        size = path.stat().st_size
        if size > self._max_bytes:
            raise InvalidInput(f"{path.name}: {size} bytes, over the limit of {self._max_bytes}")
        return parse_faq_file(path.name, path.read_bytes())

    def import_path(
        self, kb: KnowledgeBase, path: Path, progress: Progress | None = None,
        defaults: DocumentScope | None = None,
    ) -> FaqImportOutcome:
        """Import one JSONL or CSV file: every row is valid or nothing is stored."""
        return self.import_rows(kb, self.read(path), progress, defaults)

    def import_rows(
        self, kb: KnowledgeBase, rows: Sequence[FaqRow], progress: Progress | None = None,
        defaults: DocumentScope | None = None,
    ) -> FaqImportOutcome:
        """Embed the questions of new entries, index them, then store them as facts.

        `defaults` is the scope of rows that give none (a row's own values override it);
        an entry whose question, answer and scope the KB holds already is skipped.
        """
        contents = [row.content(defaults) for row in rows]
        written = self._writer.write(kb.id, add=contents, progress=progress)
        added = len(written.added)
        logger.info("FAQ import into %s: %d rows, %d added", kb.name, len(rows), added)
        return FaqImportOutcome(rows=len(rows), added=added)

    # ---- reading --------------------------------------------------------------------------

    def get(self, kb: KnowledgeBase, faq_id: str) -> FaqEntry:
        """The entry `faq_id` of `kb`, live or retired (kept for older versions)."""
        found = self._repository.get_faq_entries([faq_id])
        if not found or found[0].kb_id != kb.id:
            raise NotFound(f"FAQ entry {faq_id!r} does not exist in knowledge base {kb.name!r}")
        return found[0]

    def page(
        self, kb: KnowledgeBase, offset: int = 0, limit: int | None = None,
        visible: SearchFilter | None = None,
    ) -> FaqPage:
        """Live entries of `kb` (the draft's), oldest first; with `visible`, only those a
        search with that filter may see (the scope of an API key)."""
        if offset < 0 or (limit is not None and not 1 <= limit <= MAX_PAGE):
            raise InvalidInput(f"offset must be >= 0 and limit 1-{MAX_PAGE}")
        entries = self._repository.list_faq_entries(kb.id, live_only=True)
        if visible is not None:
            entries = [e for e in entries if faq_visible(e, visible)]
        end = None if limit is None else offset + limit
        return FaqPage(tuple(entries[offset:end]), len(entries), offset, limit)

    # ---- changes --------------------------------------------------------------------------

    def update(self, kb: KnowledgeBase, faq_id: str, changes: FaqChanges) -> FaqEntry:
        """Change a live entry: re-embedded and re-indexed as a new entry (a new id) that
        replaces it in the draft. Unchanged content returns the entry as it is; content
        identical to another live entry is FaqConflict."""
        entry = self._live(kb, faq_id)
        content = changes.apply(entry.content)
        if content.same_as(entry.content):
            return entry
        written = self._writer.write(kb.id, add=[content], remove=[entry.id], strict=True)
        (updated,) = written.added
        logger.info("FAQ entry %s of %s updated: now %s", entry.id, kb.name, updated.id)
        return updated

    def delete(self, kb: KnowledgeBase, faq_id: str) -> None:
        """Remove a live entry from the draft (older retained versions keep it)."""
        self._live(kb, faq_id)
        self._writer.write(kb.id, remove=[faq_id])
        logger.info("FAQ entry %s of %s deleted", faq_id, kb.name)

    def clear(self, kb: KnowledgeBase) -> int:
        """Remove every live entry of `kb` from the draft; how many there were."""
        ids = [e.id for e in self._repository.list_faq_entries(kb.id, live_only=True)]
        if not ids:
            return 0
        return self._writer.write(kb.id, remove=ids).removed

    def delete_all(self, kb: KnowledgeBase) -> int:
        """Remove every FAQ entry of `kb`, of every version, from the index and the facts
        (the KB is being deleted); how many rows there were."""
        ids = [entry.id for entry in self._repository.list_faq_entries(kb.id)]
        self._index.delete_chunks(ids)
        return self._repository.delete_faq_entries(kb.id)

    def _live(self, kb: KnowledgeBase, faq_id: str) -> FaqEntry:
        entry = self.get(kb, faq_id)
        if not entry.live:
            raise NotFound(f"FAQ entry {faq_id!r} of {kb.name!r} was deleted or replaced "
                           f"(version {entry.valid_to_seq}); only older versions hold it")
        return entry
