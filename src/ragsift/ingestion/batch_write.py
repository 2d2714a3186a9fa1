"""Writing a batch of prepared documents: one index write, then the facts (one transaction
for the batch with versions; each document's without), then the batch read back at once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ragsift.domain.models import Document, DocumentStatus
from ragsift.ingestion.outcomes import IngestOutcome
from ragsift.ingestion.preparation import Prepared
from ragsift.ports import Repository, SearchIndex
from ragsift.storage_full import describe, log_failure
from ragsift.versions.writer import DraftWriter, Pending

logger = logging.getLogger(__name__)


class BatchWriter:
    """Writes prepared documents together; a failure fails the documents it concerns.

    `fail` records a document FAILED with the reason an error gives, given the bytes the
    write needed (and removes what it left in the index; see DocumentStates.fail_on);
    `reload` reads documents' current state, by id; `written` is told of each document stored.
    """

    def __init__(
        self, repository: Repository, index: SearchIndex, versions: DraftWriter | None,
        fail: Callable[[Document, BaseException, int | None], Document],
        reload: Callable[[Sequence[str]], Mapping[str, Document]],
        written: Callable[[Prepared], None] = lambda prepared: None,
    ) -> None:
        self._repository = repository
        self._index = index
        self._versions = versions
        self._fail = fail
        self._reload = reload
        self._written = written

    def write(self, batch: Sequence[Prepared]) -> dict[str, IngestOutcome]:
        if not batch:
            return {}
        if self._versions is not None:
            return self._write_versioned(batch)
        try:
            self._index.upsert(
                [record for p in batch for record in p.records],
                np.concatenate([p.vectors for p in batch]),
            )
        except Exception as exc:
            log_failure(logger, exc, "writing %d documents to the index failed", len(batch))
            needed = bytes_needed(batch)
            return {
                p.document.id: IngestOutcome(self._fail(p.document, exc, needed))
                for p in batch
            }
        outcomes: dict[str, IngestOutcome] = {}
        stored: list[Prepared] = []
        for p in batch:
            try:
                self._repository.replace_chunks(p.document.id, p.chunks)
                self._repository.set_status(p.document.id, DocumentStatus.READY)
                self._written(p)
                stored.append(p)
            except Exception as exc:
                log_failure(logger, exc, "storing the chunks of %s failed", p.document.filename)
                outcomes[p.document.id] = IngestOutcome(
                    self._fail(p.document, exc, bytes_needed([p]))
                )
        return outcomes | self._reloaded(stored)

    def _write_versioned(self, batch: Sequence[Prepared]) -> dict[str, IngestOutcome]:
        assert self._versions is not None
        written = self._versions.write_many([
            Pending(p.document, p.chunks, p.vectors_by_text(), p.analyzed_by_text())
            for p in batch
        ])
        outcomes: dict[str, IngestOutcome] = {}
        stored: list[Prepared] = []
        for p in batch:
            result = written[p.document.id]
            if isinstance(result, Exception):
                logger.error("storing %s failed: %s", p.document.filename, describe(result))
                outcomes[p.document.id] = IngestOutcome(
                    self._fail(p.document, result, bytes_needed([p])))
            else:
                self._written(p)
                stored.append(p)
        return outcomes | self._reloaded(stored, written)

    def _reloaded(
        self, stored: Sequence[Prepared], counts: Mapping[str, int | Exception] | None = None,
    ) -> dict[str, IngestOutcome]:
        """The stored documents as they are now (READY), with their indexed chunk counts."""
        if not stored:
            return {}
        documents = self._reload([p.document.id for p in stored])
        outcomes: dict[str, IngestOutcome] = {}
        for p in stored:
            count = len(p.records) if counts is None else counts[p.document.id]
            assert isinstance(count, int)
            outcomes[p.document.id] = IngestOutcome(documents[p.document.id], chunks=count)
        return outcomes


# Disk a stored chunk takes, per byte of its vector and of its text: the dense stores (the
# second channel's 512-d vectors, where configured, and the row logs) and the facts rows
# (parents too, with their indexes) plus the BM25 postings. Measured on 801 child chunks
# (48 tokens, 400 paragraphs): 3.83 MB written, 3.79 MB estimated. It only sizes the
# "needed ~N MB" of a full disk's message.
_BYTES_PER_VECTOR_BYTE = 2.5
_BYTES_PER_TEXT_BYTE = 6


def bytes_needed(batch: Sequence[Prepared]) -> int:
    """About how much disk writing `batch` to the index and the facts takes."""
    text = sum(len(record.text.encode("utf-8")) for p in batch for record in p.records)
    vectors = sum(int(p.vectors.nbytes) for p in batch)
    return int(_BYTES_PER_VECTOR_BYTE * vectors) + _BYTES_PER_TEXT_BYTE * text
