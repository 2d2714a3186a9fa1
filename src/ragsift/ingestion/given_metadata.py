"""Metadata given with a file (upload form, `--meta`, a sidecar, front matter) applied to the
document the file became. One rule for the REST upload and `ragsift ingest`: a duplicate (the
file's bytes are already a document of the KB, maybe another file's) keeps its metadata unless
the caller asked to replace it; the caller reports `ignored` to the user."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ragsift.domain.metadata import same_metadata

if TYPE_CHECKING:
    from ragsift.domain.models import KnowledgeBase
    from ragsift.ingestion.metadata_refresh import MetadataChanges
    from ragsift.ingestion.outcomes import IngestOutcome
    from ragsift.ports.repository import Repository
    from ragsift.versions.service import VersionService


def metadata_ignored(outcome: IngestOutcome, wanted: Mapping[str, Any] | None,
                     replace: bool) -> bool:
    """True when `wanted` differs from a duplicate's metadata and replacing was not asked."""
    return (outcome.duplicate and not replace and wanted is not None
            and not same_metadata(wanted, outcome.document.metadata))


def apply_given_metadata(
    repository: Repository, versions: VersionService, kb: KnowledgeBase,
    outcome: IngestOutcome, wanted: Mapping[str, Any] | None, replace: bool,
    refresh: Callable[[MetadataChanges], None] | None = None,
) -> bool:
    """Set `wanted` as the document's metadata unless the rule above keeps it; True when it
    was kept (ignored). Nothing is re-embedded: the metadata is the document's own;
    `refresh` (IngestionService.refresh_metadata) writes a changed one into the index of a
    document already indexed (one about to be is indexed with it)."""
    if wanted is None:
        return False
    if metadata_ignored(outcome, wanted, replace):
        return True
    changed = not same_metadata(wanted, outcome.document.metadata)
    if changed and refresh is not None:  # the index first (metadata_refresh.py)
        refresh({outcome.document.id: wanted})
    repository.set_metadata(outcome.document.id, wanted)
    if changed and outcome.duplicate:
        # no ingest runs for a duplicate, so none publishes the change: say it here
        versions.metadata_changed(kb)
    return False
