"""Writes a document's changes into its KB's draft version: index first, facts atomically.

New chunks reach the index before the facts (a crash leaves index rows without facts, which
the re-check of hits drops); retirements reach the facts first (a crash leaves index rows that
say "still valid", which the re-check at a version drops too). In auto mode the commit seals
the draft and, without a quality gate, activates it in the same transaction, so a document
is READY exactly when a search can find it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragsift.domain.index_records import AnalyzedText, IndexRecord
from ragsift.domain.models import Chunk, Document, DocumentStatus
from ragsift.domain.versions import DraftCommit, DraftMoved, KbVersion, PublishMode, VersionState
from ragsift.faults import crash_point
from ragsift.ingestion.embedding import Progress, embed_in_batches
from ragsift.ports import Embedder, RecordUpdatable, SearchIndex, Vectors, VersionStore
from ragsift.storage_full import log_failure, without_library_links
from ragsift.versions.builder import DocumentPlan, children, index_record, plan_document

logger = logging.getLogger(__name__)

# Plans made stale by a concurrent seal or change of the same document are made again.
MAX_ATTEMPTS = 5

OnCommit = Callable[[str, KbVersion | None], None]


@dataclass(frozen=True, slots=True)
class Pending:
    """A document's new chunks and the vectors at hand (by chunk text) for the new ones.

    `analyzed`: BM25 tokens analyzed ahead (by chunk text), passed on to the index.
    """

    document: Document
    chunks: Sequence[Chunk]
    vectors: dict[str, Vectors]
    analyzed: Mapping[str, AnalyzedText] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VersionDefaults:
    """The policy a KB gets on its first versioned change."""

    mode: PublishMode = "auto"
    retention: int = 1


class DraftWriter:
    """Applies documents' new chunk sets (or their deletion) to their KB's draft."""

    def __init__(
        self, store: VersionStore, index: SearchIndex, embedder: Embedder,
        defaults: VersionDefaults, batch_size: int = 16, on_commit: OnCommit | None = None,
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self._defaults = defaults
        self._batch = batch_size
        self.on_commit = on_commit  # set by the VersionService: gate, activation, collection

    def state(self, kb_id: str) -> VersionState:
        """The KB's version state, created with the defaults on first use."""
        state = self._store.get_version_state(kb_id)
        if state is None:
            self._store.ensure_version_state(kb_id, self._defaults.mode, self._defaults.retention)
            state = self._store.get_version_state(kb_id)
            assert state is not None
        return state

    def to_embed(self, document: Document, chunks: Sequence[Chunk]) -> list[Chunk]:
        """The children that need a vector: those the draft does not share with a version."""
        return self.to_embed_many([(document, chunks)])[0]

    def to_embed_many(
        self, items: Sequence[tuple[Document, Sequence[Chunk]]]
    ) -> list[list[Chunk]]:
        """to_embed() of several documents: one read of their rows, one of each KB's state."""
        rows = self._store.list_chunks_of([document.id for document, _ in items])
        drafts: dict[str, int] = {}
        found: list[list[Chunk]] = []
        for document, chunks in items:
            if document.kb_id not in drafts:
                drafts[document.kb_id] = self.state(document.kb_id).draft_seq
            plan = plan_document(chunks, rows[document.id], drafts[document.kb_id])
            found.append(children(plan.add))
        return found

    def write(
        self, document: Document, chunks: Sequence[Chunk], vectors: dict[str, Vectors],
        progress: Progress | None = None,
    ) -> int:
        """Make `chunks` the document's content in the draft; the number of indexed chunks.

        `vectors` maps chunk text to its vector; texts missing from it are embedded here.
        The document ends READY (in the same transaction as its chunks).
        """
        outcome = self.write_many([Pending(document, chunks, vectors)], progress)[document.id]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def write_many(
        self, pending: Sequence[Pending], progress: Progress | None = None
    ) -> dict[str, int | Exception]:
        """write() for several documents: per KB one index write and one transaction, so one
        version per batch in auto mode. When that transaction fails, each document is tried
        alone, so only the documents at fault fail. By document id: indexed chunks or error.
        """
        results: dict[str, int | Exception] = {}
        by_kb: dict[str, list[Pending]] = {}
        for item in pending:
            by_kb.setdefault(item.document.kb_id, []).append(item)
        for group in by_kb.values():
            try:
                plans = self._apply(group, DocumentStatus.READY, progress)
            except Exception as exc:
                if len(group) == 1:
                    results[group[0].document.id] = exc
                    continue
                logger.warning("writing %d documents together failed (%s); one by one",
                               len(group), without_library_links(str(exc)))
                for item in group:
                    results.update(self.write_many([item], progress))
                continue
            for item, plan in zip(group, plans, strict=True):
                results[item.document.id] = len(children(plan.keep)) + len(children(plan.add))
        return results

    def retire(self, document: Document) -> bool:
        """Remove the document from the draft, kept for the versions that hold it.

        It ends RETIRED (its sha256 cleared, so the same file can be added again). Returns
        True when nothing of it is left in any version: the caller then deletes it outright.
        """
        rows = self._store.list_chunks(document.id)
        if not rows:
            return True
        plan = self._apply([Pending(document, (), {})], DocumentStatus.RETIRED, None)[0]
        gone = {c.id for c in plan.drop}
        return all(row.id in gone for row in rows)

    def _apply(
        self, group: Sequence[Pending], status: DocumentStatus, progress: Progress | None
    ) -> list[DocumentPlan]:
        """Plan, index and commit the documents of one KB; plans again when outdated."""
        kb_id = group[0].document.kb_id
        for _ in range(MAX_ATTEMPTS):
            state = self.state(kb_id)
            rows = self._store.list_chunks_of([item.document.id for item in group])
            plans = [plan_document(item.chunks, rows[item.document.id], state.draft_seq)
                     for item in group]
            records: list[IndexRecord] = []
            vectors: list[Vectors] = []
            for item, plan in zip(group, plans, strict=True):
                added = children(plan.add)
                self._embed_missing(added, item.vectors, progress)
                records += [index_record(item.document, c, item.analyzed.get(c.text))
                            for c in added]
                vectors += [item.vectors[c.text] for c in added]
            if records:
                try:
                    self._index.upsert(records, np.stack(vectors))
                except BaseException:
                    # a write that failed half way (a full disk) must not leave rows behind
                    self._discard(records)
                    raise
                crash_point("index_written")
            commits = [
                DraftCommit(
                    kb_id=kb_id, document_id=item.document.id, draft_seq=plan.draft_seq,
                    basis=plan.basis, add=plan.add, retire=tuple(c.id for c in plan.retire),
                    drop=tuple(c.id for c in plan.drop), status=status,
                )
                for item, plan in zip(group, plans, strict=True)
            ]
            auto = state.mode == "auto"
            try:
                sealed = self._store.commit_draft(
                    commits, seal=auto, activate=auto and state.gate is None,
                    note=_note([item.document for item in group], status))
            except DraftMoved:
                logger.info("draft of %s moved while writing; planning again", kb_id)
                self._discard(records)
                continue
            except BaseException:
                self._discard(records)
                raise
            crash_point("committed")
            for item, plan in zip(group, plans, strict=True):
                self._finish_index(item.document, plan)
            if self.on_commit is not None:
                try:
                    self.on_commit(kb_id, sealed)
                except Exception:  # stored already: publishing or collecting is retried later
                    logger.exception("publishing the draft of %s failed", kb_id)
            return plans
        raise DraftMoved(f"could not write to knowledge base {kb_id!r}: its draft kept "
                         f"moving ({MAX_ATTEMPTS} attempts)")

    def _discard(self, records: Sequence[IndexRecord]) -> None:
        """Remove rows written for a commit that did not happen (best effort: the next
        process's recovery removes what is left, see ingestion/cleanup.py)."""
        try:
            self._index.delete_chunks([r.chunk_id for r in records])
        except Exception as exc:
            log_failure(logger, exc, "could not remove %d uncommitted index rows", len(records))

    def _embed_missing(
        self, added: Sequence[Chunk], vectors: dict[str, Vectors], progress: Progress | None
    ) -> None:
        missing = list(dict.fromkeys(c.text for c in added if c.text not in vectors))
        if missing:
            embedded = embed_in_batches(self._embedder, missing, self._batch, progress)
            vectors.update(zip(missing, embedded, strict=True))

    def _finish_index(self, document: Document, plan: DocumentPlan) -> None:
        """After the facts: mark retired children in the index and remove dropped ones."""
        retired = [index_record(document, c.model_copy(update={"valid_to_seq": plan.draft_seq}))
                   for c in children(plan.retire)]
        try:
            if retired:
                self._update_records(retired)
            dropped = [c.id for c in children(plan.drop)]
            if dropped:
                self._index.delete_chunks(dropped)
        except Exception:  # the facts are right; searches re-check hits against them
            logger.exception("index update after versioning %s failed", document.id)

    def _update_records(self, records: list[IndexRecord]) -> None:
        if isinstance(self._index, RecordUpdatable):
            self._index.update_records(records)
            return
        # an index that cannot rewrite fields in place gets the rows again; the embedding
        # cache holds these texts, so the model is not run again
        logger.debug("index %s cannot update records in place; upserting %d rows",
                     type(self._index).__name__, len(records))
        self._index.upsert(records, self._embedder.embed_passages([r.text for r in records]))


def _note(documents: Sequence[Document], status: DocumentStatus) -> str:
    verb = "deleted" if status == DocumentStatus.RETIRED else "added or changed"
    names = ", ".join(d.filename for d in documents[:3])
    more = f" and {len(documents) - 3} more" if len(documents) > 3 else ""
    return f"{verb} {names}{more}"
