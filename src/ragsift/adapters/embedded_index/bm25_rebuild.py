"""Rebuilding one kb's BM25 index beside the live one, the switch, and the layout upgrade.

A rebuild writes a new tantivy index into `<kb dir>.staged`; writes to the kb made meanwhile
go to the live index (searches stay current) and are journaled, then replayed onto the new
index under the store's write lock, and the directories are switched: live -> `.retired`,
staged -> live. Searches in flight keep the searcher of the old index, whose files stay
readable after they are deleted (POSIX), so every search sees one whole index.

Crash safety: the live directory exists before a build starts, so at start-up a missing live
directory means a crash between the two renames, when the staged index was complete: it is
promoted. Otherwise a staged directory is an unfinished build and is deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_layout import (
    KB_DIRECTORY,
    LOCK_FILE,
    SparseLayoutOutdated,
)
from ragsift.domain.errors import InvalidInput
from ragsift.domain.index_records import IndexRecord

logger = logging.getLogger(__name__)

STAGED = ".staged"
RETIRED = ".retired"
# Present while a layout upgrade waits for `ragsift rebuild-sparse` to rebuild every kb.
UPGRADE_MARKER = "REBUILD_REQUIRED"


class RebuildInProgress(InvalidInput):
    """The kb's BM25 index is being rebuilt already (by this process)."""

    code = "rebuild_in_progress"


@dataclass(frozen=True, slots=True)
class JournaledUpsert:
    records: tuple[IndexRecord, ...]


@dataclass(frozen=True, slots=True)
class JournaledDelete:
    field: str
    values: tuple[str, ...]


JournalEntry = JournaledUpsert | JournaledDelete


class KbRebuild:
    """A kb's new BM25 index under construction; `add` the kb's chunks from the facts.

    Only the thread running the rebuild calls `add`; the store appends to `journal` and
    calls `finish` under its write lock.
    """

    def __init__(self, kb_id: str, index: KbIndex, directory: Path) -> None:
        self.kb_id = kb_id
        self.journal: list[JournalEntry] = []
        self.added = 0
        self._index = index
        self._directory = directory

    def add(self, records: Sequence[IndexRecord]) -> None:
        """Index these chunks in the new index (by chunk_id: a later one replaces)."""
        strays = {record.kb_id for record in records} - {self.kb_id}
        if strays:
            raise ValueError(f"rebuild of kb {self.kb_id!r} got chunks of kbs {sorted(strays)}")
        writer = self._index.writer()
        for record in records:
            writer.delete_documents_by_term("chunk_id", record.chunk_id)
            writer.add_document(self._index.document(record))
        self.added += len(records)

    def finish(self) -> None:
        """Replay the journal onto the new index, commit it and release its writer."""
        writer = self._index.writer()
        for entry in self.journal:
            if isinstance(entry, JournaledUpsert):
                for record in entry.records:
                    writer.delete_documents_by_term("chunk_id", record.chunk_id)
                    writer.add_document(self._index.document(record))
            else:
                for value in entry.values:
                    writer.delete_documents_by_term(entry.field, value)
        self._index.commit()
        self._index.close_writer()
        logger.info("rebuilt BM25 index of kb %s: %d chunks from the facts, %d journaled "
                    "writes replayed", self.kb_id, self.added, len(self.journal))

    def discard(self) -> None:
        """Drop an unfinished build (no-op once switched in)."""
        with contextlib.suppress(Exception):
            self._index.close_writer()
        remove_tree(self._directory)


def staged_directory(root: Path, name: str) -> Path:
    return root / f"{name}{STAGED}"


def switch_in(root: Path, name: str) -> None:
    """Make the staged index of kb directory `name` the live one (two renames, then fsync)."""
    live, staged, retired = root / name, root / f"{name}{STAGED}", root / f"{name}{RETIRED}"
    remove_tree(retired)
    if live.exists():
        os.rename(live, retired)
    # A crash here leaves no live directory and a complete staged one: recover() promotes it.
    os.rename(staged, live)
    _fsync_directory(root)
    remove_tree(retired)


def recover(root: Path) -> None:
    """Finish or undo a switch or build that a crash interrupted (under the store's lock)."""
    entries = sorted(root.iterdir(), key=lambda entry: not entry.name.endswith(STAGED))
    for entry in entries:
        base, suffix = entry.name[:40], entry.name[40:]
        if not KB_DIRECTORY.fullmatch(base) or suffix not in (STAGED, RETIRED):
            continue
        live = root / base
        if live.exists():
            remove_tree(entry)  # an unfinished build or a leftover
        else:
            os.rename(entry, live)  # the switch was interrupted between its renames
            logger.warning("completed an interrupted BM25 index switch in %s", live)
    _fsync_directory(root)


def check_layout(root: Path, upgrade: bool) -> None:
    """Refuse the old layout (one tantivy index for all kbs at the root) unless upgrading.

    It cannot be converted in place because the analyzed text is not stored; the chunks
    must be indexed again from the relational store, which is the source of truth.
    """
    outdated = (root / "meta.json").exists()
    if upgrade and (outdated or (root / UPGRADE_MARKER).exists()):
        move_single_index_aside(root)
    elif outdated:
        raise SparseLayoutOutdated(
            f"{root} holds a BM25 index in the old single-index layout (one index shared by "
            "every knowledge base), which this version cannot read or convert because the "
            "indexed text is not stored. Rebuild it from the database with `ragsift "
            "rebuild-sparse` (every knowledge base; nothing is re-embedded)."
        )
    elif (root / UPGRADE_MARKER).exists():
        raise SparseLayoutOutdated(
            f"{root}: an upgrade of the BM25 layout has not finished; run `ragsift "
            "rebuild-sparse` again to rebuild every knowledge base."
        )


def move_single_index_aside(root: Path) -> Path | None:
    """Move the files of the old single-index layout out of `root`; where they went.

    The marker is written first and removed only when every kb was rebuilt, so an upgrade
    interrupted anywhere is noticed and resumed.
    """
    mark_upgrade(root)
    keep = {LOCK_FILE, UPGRADE_MARKER}
    strays = [
        entry for entry in root.iterdir()
        if entry.name not in keep and not KB_DIRECTORY.fullmatch(entry.name[:40])
    ]
    if not strays:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    aside = root.parent / f"{root.name}.single-index-{stamp}"
    aside.mkdir()
    # meta.json last: while it is here the old layout is still recognised
    for entry in sorted(strays, key=lambda entry: entry.name == "meta.json"):
        os.rename(entry, aside / entry.name)
    _fsync_directory(root)
    logger.warning("moved the old single-index BM25 files to %s (safe to delete)", aside)
    return aside


def mark_upgrade(root: Path) -> None:
    """Note that every kb must be rebuilt (kept until the upgrade finishes)."""
    (root / UPGRADE_MARKER).write_text(
        "The BM25 index of every knowledge base must be rebuilt: run `ragsift rebuild-sparse`.\n"
    )


def remove_tree(path: Path) -> None:
    """Delete a directory tree, also a damaged index whose permissions were taken away.

    What still cannot be deleted is logged and left: a leftover beside the live index is
    harmless (the next start tries again) and must not fail a rebuild that succeeded.
    """
    if not path.exists():
        return
    try:
        shutil.rmtree(path)
    except OSError:
        _grant_owner_access(path)
        shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        logger.warning("could not delete %s; delete it by hand", path)


def _grant_owner_access(path: Path) -> None:
    """chmod u+rwx every directory of a tree we own, so its entries can be listed and removed."""
    with contextlib.suppress(OSError):
        path.chmod(0o700)
        # top-down: each directory is made listable before os.walk reads it
        for directory, subdirectories, _ in os.walk(path):
            for name in subdirectories:
                with contextlib.suppress(OSError):
                    Path(directory, name).chmod(0o700)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
