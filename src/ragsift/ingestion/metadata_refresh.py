"""A document's metadata, changed after indexing, written again into the index it was
indexed with: the BM25 index holds each chunk's metadata as terms (domain/metadata_terms.py).

A metadata change writes the facts; until the index's terms are rewritten, filters treat the
document as changed and restrict it by document key (exact, but the cost of a whitelist,
and past bm25_terms.STALE_MAX changed documents the whole KB's filters go by whitelist). So
a process that may write the index rewrites the document's chunks right after the change:
the same records ingestion writes, vectors kept (RecordUpdatable). Only chunks the index
still holds are rewritten, so a delete or re-ingest racing this never brings one back; a
crash between the two writes leaves the document filtered by key, as before.
"""

from __future__ import annotations

from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.ingestion.preparation import index_records
from ragsift.ports import Repository, SearchIndex
from ragsift.ports.index import RecordUpdatable


def refresh_metadata(repository: Repository, index: SearchIndex, document_id: str) -> int:
    """Rewrite a READY document's chunks in `index` with its metadata as the facts hold it
    now; the number of chunks sent (0: not READY, or an index without metadata terms to
    rewrite in place, such as Milvus, which filters on the facts' whitelist)."""
    if not isinstance(index, RecordUpdatable):
        return 0
    document = repository.get_document(document_id)
    if document is None or document.status != DocumentStatus.READY:
        return 0  # an ingest under way indexes the metadata it reads just before writing
    children = [chunk for chunk in repository.list_chunks(document_id)
                if chunk.level == CHILD_LEVEL]
    index.update_records(index_records(document, children))
    return len(children)
