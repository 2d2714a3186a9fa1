"""Writes FAQ changes into their KB's draft version, as DraftWriter does for documents.

New entries reach the FAQ index before the facts (a crash leaves index rows without facts,
which the facts check of every FAQ hit drops; a re-run in the same draft writes the same ids);
retirements reach the facts first (a crash leaves index rows that say "still valid", which the
check at a version drops too). In auto mode the commit seals the draft and, without a quality
gate, activates it in the same transaction, so an imported entry is found at once; the
VersionService's hook then publishes (behind the gate) and collects old versions.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragsift.domain.errors import NotFound
from ragsift.domain.faq import FaqCommit, FaqConflict, FaqContent, FaqEntry
from ragsift.domain.versions import DraftMoved
from ragsift.faults import crash_point
from ragsift.ingestion.embedding import Progress, embed_in_batches
from ragsift.ports import Embedder, RecordUpdatable, Repository, SearchIndex, Vectors
from ragsift.retrieval.faq import faq_records
from ragsift.versions.writer import MAX_ATTEMPTS, DraftWriter

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FaqWritten:
    """The entries a write added (in order) and how many live entries it removed."""

    added: tuple[FaqEntry, ...]
    removed: int


class FaqWriter:
    """Adds, replaces and removes FAQ entries in their KB's draft version."""

    def __init__(
        self, store: Repository, index: SearchIndex, embedder: Embedder, drafts: DraftWriter,
        batch_size: int = 16,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self._store = store
        self._index = index
        self._embedder = embedder
        self._drafts = drafts  # the KB's version state, and the publish hook
        self._batch = batch_size

    def write(
        self, kb_id: str, add: Sequence[FaqContent] = (), remove: Sequence[str] = (),
        strict: bool = False, progress: Progress | None = None, note: str | None = None,
    ) -> FaqWritten:
        """Add entries (one whose question, answer and scope are live already is skipped, or
        with `strict` refused: FaqConflict) and remove the live entries `remove` names
        (NotFound when one is unknown or no longer live), as one change to the draft."""
        vectors: dict[str, Vectors] = {}  # by question, kept across attempts
        for _ in range(MAX_ATTEMPTS):
            state = self._drafts.state(kb_id)
            seq = state.draft_seq
            targets = self._targets(kb_id, remove)
            leaving = {entry.id for entry in targets}
            entries = _first_of_each_key([content.entry(kb_id, seq) for content in add])
            live = {key: faq_id for key, faq_id in
                    self._store.live_faq_keys(kb_id, [e.sha256 for e in entries]).items()
                    if faq_id not in leaving}
            if strict and any(e.sha256 in live for e in entries):
                taken = next(live[e.sha256] for e in entries if e.sha256 in live)
                raise FaqConflict(f"an entry with the same question, answer and scope is "
                                  f"already in the knowledge base: {taken!r}")
            fresh = [e for e in entries if e.sha256 not in live]
            if fresh:
                self._embed_missing(fresh, vectors, progress)
                try:
                    self._index.upsert(faq_records(fresh),
                                       np.stack([vectors[e.question] for e in fresh]))
                except BaseException:
                    # a write that failed half way (a full disk) must not leave rows behind
                    self._undo(fresh, targets, vectors)
                    raise
                crash_point("index_written")
            commit = FaqCommit(
                kb_id=kb_id, draft_seq=seq, add=tuple(fresh),
                retire=tuple(e.id for e in targets if e.valid_from_seq != seq),
                drop=tuple(e.id for e in targets if e.valid_from_seq == seq), strict=strict,
            )
            auto = state.mode == "auto"
            try:
                committed = self._store.commit_faq(
                    commit, seal=auto, activate=auto and state.gate is None,
                    note=note or _note(len(fresh), len(targets)))
            except DraftMoved:
                logger.info("draft of %s moved while writing FAQ entries; planning again",
                            kb_id)
                self._undo(fresh, targets, vectors)
                continue
            except BaseException:
                self._undo(fresh, targets, vectors)
                raise
            crash_point("committed")
            added = set(committed.added)
            self._discard([e for e in fresh if e.id not in added])  # raced: stored by another
            self._finish_index(commit, targets, added, vectors)
            if committed.sealed is not None and self._drafts.on_commit is not None:
                try:
                    self._drafts.on_commit(kb_id, committed.sealed)
                except Exception:  # stored already: publishing or collecting is retried later
                    logger.exception("publishing the draft of %s failed", kb_id)
            return FaqWritten(added=tuple(e for e in fresh if e.id in added),
                              removed=len(targets))
        raise DraftMoved(f"could not write to knowledge base {kb_id!r}: its draft kept "
                         f"moving ({MAX_ATTEMPTS} attempts)")

    def _targets(self, kb_id: str, ids: Sequence[str]) -> list[FaqEntry]:
        wanted = list(dict.fromkeys(ids))
        found = {e.id: e for e in self._store.get_faq_entries(wanted)
                 if e.kb_id == kb_id and e.live}
        missing = [faq_id for faq_id in wanted if faq_id not in found]
        if missing:
            raise NotFound(f"FAQ entry {missing[0]!r} is not a live entry of knowledge base "
                           f"{kb_id!r}")
        return [found[faq_id] for faq_id in wanted]

    def _embed_missing(
        self, entries: Sequence[FaqEntry], vectors: dict[str, Vectors], progress: Progress | None
    ) -> None:
        # Dense vectors embed the question only; BM25 gets question and answer.
        missing = list(dict.fromkeys(e.question for e in entries if e.question not in vectors))
        if missing:
            embedded = embed_in_batches(self._embedder, missing, self._batch, progress)
            vectors.update(zip(missing, embedded, strict=True))

    def _discard(self, entries: Sequence[FaqEntry]) -> None:
        """Remove index rows written for entries the facts do not hold (best effort: the
        facts check of every hit drops what is left)."""
        if not entries:
            return
        stored = {e.id for e in self._store.get_faq_entries([e.id for e in entries])}
        orphans = [e.id for e in entries if e.id not in stored]
        if orphans:
            with contextlib.suppress(Exception):
                self._index.delete_chunks(orphans)

    def _undo(
        self, fresh: Sequence[FaqEntry], targets: Sequence[FaqEntry],
        vectors: dict[str, Vectors],
    ) -> None:
        """After a commit that did not happen: drop the rows written for it, and rewrite the
        rows of targets it overwrote (a draft-only entry replaced under the same id)."""
        self._discard(fresh)
        written = {e.id for e in fresh}
        overwritten = [e for e in targets if e.id in written]
        if overwritten:
            with contextlib.suppress(Exception):
                self._embed_missing(overwritten, vectors, None)
                self._index.upsert(faq_records(overwritten),
                                   np.stack([vectors[e.question] for e in overwritten]))

    def _finish_index(
        self, commit: FaqCommit, targets: Sequence[FaqEntry], added: set[str],
        vectors: dict[str, Vectors],
    ) -> None:
        """After the facts: mark retired entries in the index and remove dropped ones."""
        retired = [e.model_copy(update={"valid_to_seq": commit.draft_seq})
                   for e in targets if e.id in commit.retire]
        dropped = [faq_id for faq_id in commit.drop if faq_id not in added]
        try:
            if retired:
                if isinstance(self._index, RecordUpdatable):
                    self._index.update_records(faq_records(retired))
                else:  # the rows again; the embedding cache holds these questions
                    self._embed_missing(retired, vectors, None)
                    self._index.upsert(faq_records(retired),
                                       np.stack([vectors[e.question] for e in retired]))
            if dropped:
                self._index.delete_chunks(dropped)
        except Exception:  # the facts are right; FAQ hits are re-checked against them
            logger.exception("FAQ index update after versioning %s failed", commit.kb_id)


def _first_of_each_key(entries: Sequence[FaqEntry]) -> list[FaqEntry]:
    seen: dict[str, FaqEntry] = {}
    for entry in entries:
        seen.setdefault(entry.sha256, entry)
    return list(seen.values())


def _note(added: int, removed: int) -> str:
    parts = [f"{n} entr{'y' if n == 1 else 'ies'} {verb}"
             for n, verb in ((added, "added"), (removed, "removed")) if n]
    return "FAQ: " + (", ".join(parts) or "no change")
