"""Immutable views of the dense store that searches read, and the filter-then-rank search."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_by_index import BY_INDEX_MIN_ROWS, scores_by_index
from ragsift.adapters.embedded_index.dense_columns import Vocabulary
from ragsift.adapters.embedded_index.dense_document_spans import DocumentSpans
from ragsift.adapters.embedded_index.dense_log import FILTER_FIELDS, VERSION_FIELDS, Row
from ragsift.adapters.embedded_index.dense_rows import READ_MAX_ROWS, RowReader
from ragsift.adapters.embedded_index.sorted_unique import present_codes
from ragsift.adapters.thread_budget import default_budget
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit

Int32Array = NDArray[np.int32]
IntpArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]
Float32Array = NDArray[np.float32]

# Gathering scattered rows copies them, so it only pays off for a small share of the matrix;
# above this share one product over the whole matrix is cheaper.
_GATHER_MAX_SHARE = 0.35
_GATHER_BLOCK_ROWS = 256
# Rows usually arrive a document at a time, so candidates form contiguous runs; when runs are
# this long on average, multiplying each run in place beats copying the rows out.
_MIN_MEAN_RUN = 24
_CACHE_SIZE = 64
# Below this many whitelisted documents the whitelist itself is short enough for BM25.
_MIN_COMPLEMENT = 64
# A whitelist is looked up by its documents' spans when it names at most one document per
# this many rows of the store (and their spans hold at most an eighth of the rows); a
# longer one by a scan of every row's codes, which its spans would cost more than.
_SPAN_DOCUMENT_ROWS = 64


class _ExactLimit(Protocol):
    @property
    def exact_max_rows(self) -> int: ...


class ApproximateIndex(Protocol):
    """What a snapshot asks of the approximate index (dense_ann.AnnIndex). A protocol, so
    this module, which that index reads, does not import it back."""

    @property
    def settings(self) -> _ExactLimit: ...

    def candidates(self, snap: Snapshot, kb_id: str, query: Float32Array,
                   allowed: Candidates, limit: int) -> IntpArray | None: ...


@dataclass(frozen=True, slots=True)
class Candidates:
    """Rows a filter allows, in row order, and where each contiguous run of them starts."""

    rows: IntpArray
    run_starts: IntpArray
    # The rows as a bit per row, built on first use by the graph search (then kept).
    bits: list[NDArray[np.uint8]] = field(default_factory=list)

    def spans(self) -> list[tuple[int, int]]:
        """(first, end) positions in `rows` of each contiguous run of rows."""
        starts = self.run_starts.tolist()
        return list(zip(starts, [*starts[1:], self.rows.size], strict=True))

    def bitmap(self, size: int) -> NDArray[np.uint8]:
        """A little-endian bitmap of `rows` over `size` rows (faiss's IDSelectorBitmap)."""
        if not self.bits:
            mask = np.zeros(size, dtype=np.bool_)
            mask[self.rows] = True
            self.bits.append(np.packbits(mask, bitorder="little"))
        return self.bits[0]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """What one search reads; never mutated after publication except its filter cache."""

    size: int
    matrix: Float32Array
    alive: BoolArray
    live: int
    # Per filter field: code + 1 of each row's value, 0 meaning None, so 0 never matches;
    # per version field: the value itself.
    codes: dict[str, Int32Array]
    # Chunk id per row. Shared, append-only: later rows are appended past `size`, which this
    # snapshot ignores.
    ids: list[str]
    # Value <-> code per filter field; append-only until compaction replaces it wholesale.
    vocab: Vocabulary
    cache: dict[SearchFilter, Candidates] = field(default_factory=dict)
    # filter -> whitelist_plan
    complements: dict[SearchFilter, tuple[frozenset[str] | None, float]] = field(
        default_factory=dict)
    generation: int = 0
    # The approximate index (a graph per big kb), used for filters allowing more than its
    # exact_max_rows rows.
    ann: ApproximateIndex | None = None
    # Reads a few rows without mapping them (dense_rows.py); None: the matrix is read.
    reader: RowReader | None = None
    # The rows of each document (dense_document_spans.py): made on a whitelist's first need
    # and carried to the next snapshot by each write; empty until then.
    spans: list[DocumentSpans] = field(default_factory=list)
    # kb code -> by document code + 1: whether the kb has a live row of that document; made
    # on a whitelist plan's first need in that kb, never carried to the next snapshot.
    held: dict[int, BoolArray] = field(default_factory=dict)

    def search(
        self, query: Float32Array, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Top-`limit` allowed rows by dot product with a unit query; ties by chunk_id."""
        if limit <= 0 or self.live == 0:
            return []
        candidates = self.candidates(search_filter)
        if self.ann is not None and candidates.rows.size > self.ann.settings.exact_max_rows:
            found = self.ann.candidates(self, search_filter.kb_id, query, candidates, limit)
            if found is not None:
                candidates = _as_candidates(found)
        rows = candidates.rows
        if rows.size == 0:
            return []
        scores = self._scores(candidates, query)
        k = min(limit, rows.size)
        if k < rows.size:
            top = np.argpartition(scores, rows.size - k)[rows.size - k :]
            # Keep every row tied with the k-th score so the chunk_id tie-break is exact.
            picked = np.flatnonzero(scores >= scores[top].min())
        else:
            picked = np.arange(rows.size)
        ranked = sorted(
            ((float(scores[i]), int(rows[i])) for i in picked),
            key=lambda item: (-item[0], self.ids[item[1]]),
        )[:k]
        documents, doc_codes = self.vocab.values["document_id"], self.codes["document_id"]
        return [
            ChannelHit(chunk_id=self.ids[row], document_id=documents[doc_codes[row] - 1],
                       score=score)
            for score, row in ranked
        ]

    def row(self, number: int) -> Row:
        """The stored fields of one row, as the log holds them."""
        values = [self.vocab.value(name, int(self.codes[name][number])) for name in FILTER_FIELDS]
        versions = [int(self.codes[name][number]) for name in VERSION_FIELDS]
        return (self.ids[number], *values, *versions)  # type: ignore[return-value]

    def candidates(self, search_filter: SearchFilter) -> Candidates:
        """Rows the filter allows, cached because the same filters repeat across queries."""
        cached = self.cache.get(search_filter)
        if cached is not None:
            return cached
        found = _as_candidates(self._allowed_rows(search_filter))
        if len(self.cache) >= _CACHE_SIZE:
            self.cache.clear()
        self.cache[search_filter] = found
        return found

    def excluded_documents(self, search_filter: SearchFilter) -> frozenset[str] | None:
        """The documents of the filter's kb with live rows here that its whitelist leaves
        out, when there are fewer of them than whitelisted documents (else None): the
        shorter list for BM25 to filter on (sparse_complement.py)."""
        return self.whitelist_plan(search_filter)[0]

    def whitelist_plan(self, search_filter: SearchFilter) -> tuple[frozenset[str] | None, float]:
        """(excluded_documents, the share of the kb's documents here that the whitelist
        keeps: 0 without a whitelist of at least _MIN_COMPLEMENT); cached like rows."""
        allowed = search_filter.document_ids
        if allowed is None or len(allowed) < _MIN_COMPLEMENT:
            return None, 0.0
        cached = self.complements.get(search_filter)
        if cached is not None:
            return cached
        plan: tuple[frozenset[str] | None, float] = (None, 0.0)
        kb_code = self.vocab.index["kb_id"].get(search_filter.kb_id)
        if kb_code is not None:
            plan = self._plan(kb_code, allowed)
        if len(self.complements) >= _CACHE_SIZE:
            self.complements.clear()
        self.complements[search_filter] = plan
        return plan

    def _plan(self, kb_code: int, allowed: frozenset[str]) -> tuple[frozenset[str] | None, float]:
        """whitelist_plan of a kb that has rows here, counted in document codes: only the
        left-out documents are named, and only when they are the shorter list."""
        held = self._held_documents(kb_code)
        held_count = int(np.count_nonzero(held))
        lookup = self.vocab.index["document_id"].get
        codes = np.fromiter((lookup(d, -1) for d in allowed), dtype=np.intp, count=len(allowed))
        codes = codes[codes < held.size - 1] + 1  # -1 (unknown here) becomes code 0: not held
        kept = int(np.count_nonzero(held[codes]))
        share = kept / held_count if held_count else 0.0
        if held_count - kept >= len(allowed):
            return None, share
        left_out = held.copy()
        left_out[codes] = False
        names = self.vocab.values["document_id"]
        return frozenset(names[code - 1] for code in np.flatnonzero(left_out).tolist()), share

    def _held_documents(self, kb_code: int) -> BoolArray:
        """self.held[kb_code], made on first need (read-only: plans share it)."""
        found = self.held.get(kb_code)
        if found is None:
            in_kb = self.alive & (self.codes["kb_id"] == kb_code + 1)
            found = present_codes(self.codes["document_id"][in_kb],
                                  len(self.vocab.values["document_id"]) + 1)
            found[0] = False  # code 0: no document
            found.flags.writeable = False
            self.held[kb_code] = found
        return found

    def document_spans(self) -> DocumentSpans:
        """Where each document's rows lie, made on first need."""
        if not self.spans:
            self.spans.append(DocumentSpans.of(self.codes["document_id"][: self.size],
                                               self.alive[: self.size]))
        return self.spans[0]

    def _allowed_rows(self, search_filter: SearchFilter) -> IntpArray:
        empty: IntpArray = np.empty(0, dtype=np.intp)
        kb_code = self.vocab.index["kb_id"].get(search_filter.kb_id)
        if kb_code is None:
            return empty
        wanted_codes = [(name, self._codes(name, values))
                        for name, values in search_filter.scope_fields().items()]
        documents = None
        if search_filter.document_ids is not None:
            documents = self._codes("document_id", search_filter.document_ids)
            wanted_codes.append(("document_id", documents))
        if not all(wanted for _, wanted in wanted_codes):
            return empty
        rows = self._kb_rows(kb_code, documents)
        for name, wanted in wanted_codes:
            # A lookup table indexed by code is one gather, whatever the number of values.
            lookup = np.zeros(max(wanted) + 1, dtype=np.bool_)
            lookup[wanted] = True
            field_codes = self.codes[name][rows]
            in_range = field_codes < lookup.size
            rows = rows[in_range][lookup[field_codes[in_range]]]
        if search_filter.roles is not None and rows.size:
            allowed = self._roles_lookup(search_filter.roles)
            if not allowed.all():  # every role set allowed (or none stored): no gather needed
                rows = rows[allowed[self.codes["allowed_roles"][rows]]]
        if search_filter.version_seq is not None and rows.size:
            seq = search_filter.version_seq
            valid_to = self.codes["valid_to_seq"][rows]
            rows = rows[(self.codes["valid_from_seq"][rows] <= seq)
                        & ((valid_to == 0) | (valid_to > seq))]
        return rows

    def _codes(self, name: str, values: frozenset[str]) -> list[int]:
        """The codes + 1 (as the rows hold them) of those of `values` field `name` has here."""
        field_vocab = self.vocab.index[name]
        return [field_vocab[v] + 1 for v in values if v in field_vocab]

    def _kb_rows(self, kb_code: int, documents: list[int] | None) -> IntpArray:
        """The kb's live rows; with a whitelist of few documents (their codes + 1), only
        those within their spans (the caller keeps the whitelist's own by their codes)."""
        if documents is not None and len(documents) * _SPAN_DOCUMENT_ROWS <= self.size:
            spanned = self.document_spans().rows(documents, most=self.size // 8)
            if spanned is not None:
                keep = self.alive[spanned] & (self.codes["kb_id"][spanned] == kb_code + 1)
                found: IntpArray = spanned[keep]
                return found
        return np.flatnonzero(self.alive & (self.codes["kb_id"] == kb_code + 1))

    def _roles_lookup(self, roles: frozenset[str]) -> BoolArray:
        """By role-set code: allowed to a caller with `roles` (code 0 = unrestricted: yes)."""
        # copy() is atomic under the GIL: a writer may be adding role sets meanwhile
        field_vocab = self.vocab.index["allowed_roles"].copy()
        lookup = np.zeros(len(field_vocab) + 1, dtype=np.bool_)
        lookup[0] = True
        for key, code in field_vocab.items():
            if not roles.isdisjoint(json.loads(key)):
                lookup[code + 1] = True
        return lookup

    def _scores(self, candidates: Candidates, query: Float32Array) -> Float32Array:
        rows, run_starts = candidates.rows, candidates.run_starts
        out = np.empty(rows.size, dtype=np.float32)
        in_runs = rows.size >= _MIN_MEAN_RUN * run_starts.size
        gathered = not in_runs and rows.size <= _GATHER_MAX_SHARE * self.size
        reader = self.reader if rows.size <= READ_MAX_ROWS else None
        if gathered and reader is None and rows.size >= BY_INDEX_MIN_ROWS:
            found = scores_by_index(self.matrix, rows, query)
            if found is not None:
                return found
        spans = candidates.spans() if in_runs or reader is not None else []
        # BLAS threads by the largest single product and the calls running beside this one:
        # threads pay only on a long matvec, never on a gathered block
        if in_runs:
            largest = max(end - start for start, end in spans)
        else:
            largest = min(rows.size, _GATHER_BLOCK_ROWS) if gathered else self.size
        with default_budget().blas_call(largest * query.size):
            if reader is not None:
                out[:] = reader.read(rows, spans) @ query
            elif in_runs:
                for start, end in spans:
                    first = int(rows[start])
                    out[start:end] = self.matrix[first : first + end - start] @ query
            elif gathered:
                # Blocks keep each gathered copy cache-sized.
                for start in range(0, rows.size, _GATHER_BLOCK_ROWS):
                    block = rows[start : start + _GATHER_BLOCK_ROWS]
                    out[start : start + block.size] = self.matrix[block] @ query
            else:
                out[:] = (self.matrix @ query)[rows]
        return out


def _as_candidates(rows: IntpArray) -> Candidates:
    run_starts = np.concatenate(([0], np.flatnonzero(np.diff(rows) != 1) + 1))
    return Candidates(rows=rows, run_starts=run_starts.astype(np.intp))
