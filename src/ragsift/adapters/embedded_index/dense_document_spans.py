"""Where each document's live rows lie in the dense store: the first and last of them.

A whitelist of a few documents (a request's `document_ids`, a narrow metadata filter) was
found by scanning every row's kb and document codes: ~0.5-0.75 ms at 100k rows for 50
documents, each search anew when the whitelist is fresh. A document's chunks are written
together, so its rows are one run (or a few, when it was written in several batches: the
span then holds other rows too, which the codes tell apart). The spans give the rows to check
in proportion to the whitelist's documents.

A document replaced whole (every old row dead, new rows appended) starts a new span at its
new rows: were its dead rows kept in, one re-ingest of the kb would stretch every span over
the rows written in between, and whitelists would go back to the scan until a compaction.
So the spans count each document's live rows, and a document whose count falls to zero loses
its span.

Immutable: a write makes new spans from the old, its new rows and the rows it killed (O(those
rows) plus a copy of three arrays of one entry per document), so a snapshot's spans always
hold every live row of each document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.sorted_unique import sorted_unique

Int64Array = NDArray[np.int64]
IntpArray = NDArray[np.intp]
_UNSET = np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class DocumentSpans:
    """By document code + 1 (the store's codes): its first and last live row (-1 when it has
    none) and how many live rows it has."""

    first: Int64Array
    last: Int64Array
    live: Int64Array

    @classmethod
    def of(cls, codes: NDArray[np.int32], alive: NDArray[np.bool_] | None = None
           ) -> DocumentSpans:
        """The spans of the rows of `codes` (the document_id code + 1 of each row) that
        `alive` marks live (every row without it)."""
        size = int(codes.max()) + 1 if codes.size else 0
        rows = (np.arange(codes.size, dtype=np.int64) if alive is None
                else np.flatnonzero(alive[: codes.size]).astype(np.int64))
        held = codes[rows]
        first, last = np.full(size, -1, dtype=np.int64), np.full(size, -1, dtype=np.int64)
        _place(first, last, held, rows)
        return cls(first, last, np.bincount(held, minlength=size).astype(np.int64))

    def extended(self, codes: NDArray[np.int32], start: int,
                 dead: NDArray[np.int32] | None = None) -> DocumentSpans:
        """These spans after a write that killed rows of the codes `dead` (each a row live
        until then, written before `start`) and appended rows `start`, `start + 1`, ...
        holding `codes`."""
        dead = np.empty(0, dtype=np.int32) if dead is None else dead
        if codes.size == 0 and dead.size == 0:
            return self
        first, last, live = self._grown(np.concatenate([codes, dead]), self.first.size)
        if dead.size:
            np.subtract.at(live, dead, 1)
            gone = live == 0
            first[gone], last[gone] = -1, -1  # replaced or deleted whole: no stale span
        if codes.size:
            _place(first, last, codes, np.arange(start, start + codes.size, dtype=np.int64))
            np.add.at(live, codes, 1)
        return DocumentSpans(first, last, live)

    def written(self, codes: NDArray[np.int32], alive: NDArray[np.bool_],
                added: NDArray[np.int32], dead: Sequence[int]) -> DocumentSpans:
        """These spans (of the rows of `codes`, `alive` marking the live ones) after a write
        that appended rows holding `added` and killed the rows `dead` (old or new ones; a
        replay may name a row twice or one already dead)."""
        size = codes.size
        killed = sorted_unique(np.asarray(dead, dtype=np.intp))
        old = killed[killed < size]
        spans = self.extended(added, size, codes[old[alive[old]]])
        new = killed[(killed >= size) & (killed < size + added.size)] - size
        return spans.extended(added[:0], size + added.size, added[new]) if new.size else spans

    def _grown(self, codes: NDArray[np.int32], size: int
               ) -> tuple[Int64Array, Int64Array, Int64Array]:
        """Copies of the three arrays, long enough for `codes`."""
        size = max(size, int(codes.max()) + 1 if codes.size else 0)
        grown = []
        for old, fill in ((self.first, -1), (self.last, -1), (self.live, 0)):
            new = np.full(size, fill, dtype=np.int64)
            new[: old.size] = old
            grown.append(new)
        return grown[0], grown[1], grown[2]

    def rows(self, codes: list[int], most: int) -> IntpArray | None:
        """Sorted rows within the spans of the documents of `codes` (code + 1 each), among
        them every live row of those documents; None when the spans hold more than `most`
        rows (a scan of the codes is then the cheaper way)."""
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


def _place(first: Int64Array, last: Int64Array, codes: NDArray[np.int32],
           rows: Int64Array) -> None:
    """Widen, in place, the spans of `codes` (-1: none yet) to hold `rows`, row i's code i."""
    first[first < 0] = _UNSET
    np.minimum.at(first, codes, rows)
    first[first == _UNSET] = -1
    np.maximum.at(last, codes, rows)
