"""Where each document's rows lie in the dense store: the first and last row of each.

A whitelist of a few documents (a request's `document_ids`, a narrow metadata filter) was
found by scanning every row's kb and document codes: ~0.5-0.75 ms at 100k rows for 50
documents, each search anew when the whitelist is fresh. A document's chunks are written
together, so its rows are one run (or a few, when it was written in several batches or
replaced: the span then holds other rows too, which the codes tell apart). The spans give
the rows to check in proportion to the whitelist's documents.

Immutable: a write makes new spans from the old and its new rows (O(new rows) plus a copy of
two arrays of one entry per document), so a snapshot's spans always describe its rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.sorted_unique import sorted_unique

Int64Array = NDArray[np.int64]
IntpArray = NDArray[np.intp]


@dataclass(frozen=True, eq=False)
class DocumentSpans:
    """By document code + 1 (the store's codes): its first and last row, -1 when none."""

    first: Int64Array
    last: Int64Array

    @classmethod
    def of(cls, codes: NDArray[np.int32]) -> DocumentSpans:
        """The spans of every row of `codes` (the document_id code + 1 of each row)."""
        return cls(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)).extended(codes, 0)

    def extended(self, codes: NDArray[np.int32], start: int) -> DocumentSpans:
        """These spans and rows `start`, `start + 1`, ... holding `codes`."""
        if codes.size == 0:
            return self
        size = max(self.first.size, int(codes.max()) + 1)
        first = np.full(size, -1, dtype=np.int64)
        last = np.full(size, -1, dtype=np.int64)
        first[: self.first.size] = self.first
        last[: self.last.size] = self.last
        rows = np.arange(start, start + codes.size, dtype=np.int64)
        unset = np.iinfo(np.int64).max
        first[first < 0] = unset
        np.minimum.at(first, codes, rows)
        first[first == unset] = -1
        np.maximum.at(last, codes, rows)
        return DocumentSpans(first, last)

    def rows(self, codes: list[int], most: int) -> IntpArray | None:
        """Sorted rows within the spans of the documents of `codes` (code + 1 each), among
        them every row of those documents; None when the spans hold more than `most` rows
        (a scan of the codes is then the cheaper way)."""
        wanted = np.asarray(codes, dtype=np.int64)
        wanted = wanted[wanted < self.first.size]
        starts, ends = self.first[wanted], self.last[wanted]
        held = starts >= 0
        starts, lengths = starts[held], ends[held] - starts[held] + 1
        total = int(lengths.sum())
        if total > most:
            return None
        # each span's rows in one vectorised pass: a run of `length` rows from its start
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        return sorted_unique(offsets + np.arange(total))
