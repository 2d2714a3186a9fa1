"""What the BM25 modules share: the on-disk names of the store and its errors.

bm25_kb, bm25_lock, bm25_rebuild and bm25_store all import this module and it imports none of
them, so they form a chain (kb <- rebuild <- store) instead of a circle.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ragsift.domain.errors import IndexUnavailable, RagsiftError

LOCK_FILE = ".lock"
# The analyzer version a kb index was built with; an index without it predates versioning (1).
ANALYZER_FILE = "analyzer.json"
# Directory names of kb indexes: the sha1 hex of the kb_id, whatever characters it holds.
KB_DIRECTORY = re.compile(r"[0-9a-f]{40}")
# Files a kb directory may hold before tantivy wrote its first meta.json (our analyzer marker
# and tantivy's lock files); anything else there without a meta.json is a damaged index.
_PRE_INDEX_FILES = re.compile(r"analyzer\.json|\.tantivy-[a-z]+\.lock")


class IndexInUse(RagsiftError):
    """Another process holds the index's lock."""

    code = "index_in_use"


class SparseLayoutOutdated(RagsiftError):
    """The directory holds the old single-index BM25 layout, which cannot be converted."""

    code = "sparse_layout_outdated"


class SparseIndexBroken(IndexUnavailable):
    """One kb's BM25 index cannot be opened (files truncated, emptied or missing).

    Only that kb's BM25 searches and writes fail; `ragsift rebuild-sparse` repairs it from
    the facts without reading the damaged files.
    """

    code = "sparse_index_broken"


def kb_directory_name(kb_id: str) -> str:
    """A file-system-safe, collision-free directory name for one kb."""
    return hashlib.sha1(kb_id.encode("utf-8")).hexdigest()


def missing_meta(directory: Path) -> bool:
    """Whether a kb directory holds index files but not the meta.json that lists them.

    tantivy would open such a directory as a new, empty index and silently lose its
    chunks, so it must be reported broken instead.
    """
    if (directory / "meta.json").exists():
        return False
    return any(not _PRE_INDEX_FILES.fullmatch(entry.name) for entry in directory.iterdir())


def broken_error(kb: str, reason: str) -> SparseIndexBroken:
    """The error of a search or write into the damaged BM25 index of kb `kb` (its id)."""
    return SparseIndexBroken(
        f"the BM25 index of knowledge base {kb} cannot be read ({reason}); rebuild it from "
        f"the database with `ragsift rebuild-sparse --kb {kb}` (or POST "
        f"/api/kbs/{kb}/rebuild-sparse while the server runs; nothing is re-embedded)"
    )


def outdated_schema_error(directory: Path) -> SparseLayoutOutdated:
    """The error of a kb index written with the schema before KB versions and roles."""
    return SparseLayoutOutdated(
        f"the BM25 index in {directory} was written by an older ragsift, before chunks "
        "carried KB versions and allowed roles; rebuild it from the database with `ragsift "
        "rebuild-sparse` (nothing is re-embedded)."
    )
