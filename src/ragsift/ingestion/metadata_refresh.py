"""A document's metadata, changed after indexing, written again into the index it was
indexed with: the BM25 index holds each chunk's metadata as terms (domain/metadata_terms.py).

A metadata change writes the facts; while the index's terms differ, filters treat the
document as changed and restrict it by document key (exact, but the cost of a whitelist,
and past bm25_terms.STALE_MAX changed documents the whole KB's filters go by whitelist). So
a process that may write the index rewrites the changed documents' chunks, all in one index
write: the records ingestion writes, vectors kept (RecordUpdatable). Only chunks the index
still holds are rewritten, so a delete or re-ingest racing this never brings one back.

Where the new metadata is known before the facts take it (a sidecar, an upload), the index
is written first: a crash between the two writes leaves the facts' old metadata, which the
next run changes again, rewriting the index. A PATCH merges in the facts, so it writes them
first; a crash after that leaves the document filtered by key until the next start of a
process that writes the index (`serve`, `ingest`, `sync`), whose recovery compares every
document's indexed fingerprint with its metadata and rewrites those that differ
(`heal_stale_metadata`); so does `docs meta`, which writes the facts alone. That check reads
every document (0.5 s at 10k): the index remembers the facts' stamp it last agreed with
until its next write, so a start finding neither changed skips it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ragsift.domain.errors import RagsiftError
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.ingestion.preparation import index_records
from ragsift.ports import Repository, SearchIndex
from ragsift.ports.index import MetadataTermsHeld, RecordUpdatable
from ragsift.retrieval.scope_metadata import Fingerprints, metadata_of, typed_records

logger = logging.getLogger(__name__)

# document id -> its metadata as the facts store it
MetadataChanges = Mapping[str, Mapping[str, Any]]


def refresh_metadata(repository: Repository, index: SearchIndex,
                     changes: MetadataChanges) -> int:
    """Rewrite the chunks of the READY documents among `changes` in `index` with the metadata
    given for each, in one write; the number of chunks sent (0: none READY, or an index
    without metadata terms to rewrite in place, such as Milvus, which filters on the facts'
    whitelist)."""
    if not isinstance(index, RecordUpdatable):
        return 0
    records = []
    for document_id, metadata in changes.items():
        document = repository.get_document(document_id)
        if document is None or document.status != DocumentStatus.READY:
            continue  # an ingest under way indexes the metadata it reads just before writing
        children = [chunk for chunk in repository.list_chunks(document_id)
                    if chunk.level == CHILD_LEVEL]
        records.extend(index_records(
            document.model_copy(update={"metadata": dict(metadata)}), children))
    if records:
        index.update_records(records)
    return len(records)


def heal_stale_metadata(repository: Repository, index: SearchIndex, kb_id: str) -> int:
    """Rewrite, in one write, the chunks of the KB's READY documents whose metadata terms in
    the index are not their metadata now: a PATCH killed between its two writes, or `docs
    meta`, which writes the facts alone. The number of chunks sent (0 for an index without
    metadata terms)."""
    if not isinstance(index, MetadataTermsHeld) or not isinstance(index, RecordUpdatable):
        return 0
    # read before the facts: a change racing this check moves it, so the next one runs
    stamp = json.dumps(repository.filter_stamp(kb_id))
    if index.metadata_checked(kb_id) == stamp:
        return 0  # neither the facts nor the index changed since they last agreed
    # the facts as a metadata filter reads them (one projection, no document models: 3-4x
    # cheaper than list_documents at 10k documents); refresh_metadata skips those not READY
    fields = repository.filter_fields(kb_id)
    stale = index.stale_metadata(kb_id, Fingerprints(typed_records(fields)))
    chunks = refresh_metadata(repository, index, {d: metadata_of(fields[d]) for d in stale}
                              ) if stale else 0
    # a document skipped above (not READY) is being ingested: its write moves the index
    index.record_metadata_checked(kb_id, stamp)
    return chunks


def heal_metadata(repository: Repository, index: SearchIndex, kb_ids: Sequence[str]) -> None:
    """heal_stale_metadata for each KB; a failure is logged and leaves that KB's changed
    documents filtered by key, as before."""
    for kb_id in kb_ids:
        try:
            chunks = heal_stale_metadata(repository, index, kb_id)
        except RagsiftError as exc:  # its index broken, or read-only here
            logger.warning("the changed metadata of knowledge base %s stays out of its "
                           "index: %s", kb_id, exc)
            continue
        except Exception:
            logger.exception("writing the changed metadata of knowledge base %s into the "
                             "index failed", kb_id)
            continue
        if chunks:
            logger.info("wrote the metadata changed in the facts alone into %d chunk(s) of "
                        "knowledge base %s", chunks, kb_id)
