"""When a kb's BM25 index was last found to hold the facts' metadata, so the next check can
be skipped.

The metadata heal at a writer's start (ingestion/metadata_refresh.py) reads every document's
metadata from the facts and the index's fingerprints: O(documents), 0.5 s at 10k documents.
After it, the kb's directory keeps the facts' stamp it checked (Repository.filter_stamp:
documents and their latest change, moved by any change of a document, its metadata
included) with the index's commit (tantivy's opstamp in meta.json, moved by any write). A
later check finding both unchanged has nothing to heal. A missed heal would cost speed only:
a filter restricts documents whose terms differ by key, exactly.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ragsift.adapters.atomic_files import write_atomically

logger = logging.getLogger(__name__)

CHECK_FILE = "metadata-check.json"
_TEMP_PREFIX = ".metadata-check-"


def checked(directory: Path) -> str | None:
    """The facts' stamp the index in `directory` was found to agree with, while nothing has
    been committed to it since; None otherwise (never checked, written since, unreadable)."""
    try:
        recorded = json.loads((directory / CHECK_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(recorded, dict) or recorded.get("opstamp") != _opstamp(directory):
        return None
    facts = recorded.get("facts")
    return facts if isinstance(facts, str) else None


def record(directory: Path, facts: str) -> None:
    """Remember that the index in `directory`, as committed now, agrees with the facts at
    `facts`. Best effort: a failed write only means the next start checks again."""
    opstamp = _opstamp(directory)
    if opstamp is None:
        return
    for left in directory.glob(f"{_TEMP_PREFIX}*"):  # a killed writer's, never renamed
        left.unlink(missing_ok=True)
    try:
        write_atomically(directory / CHECK_FILE,
                         json.dumps({"facts": facts, "opstamp": opstamp}).encode("utf-8"),
                         prefix=_TEMP_PREFIX)
    except OSError as exc:
        logger.warning("could not note the metadata check of %s (the next start checks "
                       "again): %s", directory, exc)


def _opstamp(directory: Path) -> int | None:
    """The opstamp of the index's last commit (tantivy's meta.json); None when unreadable."""
    try:
        meta = json.loads((directory / "meta.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    opstamp = meta.get("opstamp") if isinstance(meta, dict) else None
    return opstamp if isinstance(opstamp, int) else None
