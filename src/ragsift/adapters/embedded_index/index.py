"""The embedded SearchIndex: a dense matrix store and a tantivy BM25 store in one directory."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ragsift.adapters.embedded_index.bm25_follow import FollowedBm25Store
from ragsift.adapters.embedded_index.bm25_kb import SparseQuery
from ragsift.adapters.embedded_index.bm25_rebuild import KbRebuild
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_store import CHECKPOINT_ROWS, DenseMatrixStore
from ragsift.adapters.embedded_index.second_dense import SecondDense
from ragsift.adapters.embedded_index.sparse_complement import (
    Search,
    by_whitelist,
    search_by_complement,
)
from ragsift.adapters.thread_budget import default_budget
from ragsift.domain.errors import IndexReadOnly
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from ragsift.faults import crash_point
from ragsift.ports import TextEncoder, Vectors

logger = logging.getLogger(__name__)


class EmbeddedIndex:
    """Zero-setup SearchIndex: exact cosine under `dense/`, per-kb BM25 under `sparse/`.

    With a `second` encoder, a second dense channel lives beside them (`dense-<model>/`): the
    index encodes each chunk's text itself, as it analyzes it for BM25, so every write path
    fills it and every delete empties it with the other two.

    `follow`: open read-only beside the process that writes the directory (which holds its
    lock): no lock is taken and no file is written or repaired; each search first takes in
    what the writer has committed since, and every write raises IndexReadOnly.
    """

    def __init__(
        self, directory: Path, dimension: int, upgrade_sparse_layout: bool = False,
        ann: AnnSettings | None = None, second: TextEncoder | None = None,
        checkpoint_rows: int = CHECKPOINT_ROWS, follow: bool = False,
    ) -> None:
        directory = Path(directory)
        self._follow = follow
        self._directory = directory
        self._sparse: TantivyBm25Store | FollowedBm25Store
        if follow:
            self._sparse = FollowedBm25Store(directory / "sparse")
        else:
            # The BM25 store takes the directory's lock (sparse/.lock), so open it first: a
            # second process on the same directory then fails before the dense store replays
            # (and repairs) its files.
            self._sparse = TantivyBm25Store(directory / "sparse",
                                            upgrade_layout=upgrade_sparse_layout)
        try:
            self._dense = DenseMatrixStore(directory / "dense", dimension, ann, checkpoint_rows,
                                           follow=follow)
        except BaseException:
            self._sparse.close()
            raise
        self._second = None if second is None else SecondDense(
            directory, second, ann, self._dense.count, checkpoint_rows, follow=follow)
        # a follower may see the writer between its two writes: only an open checks
        if not follow and self._dense.count() != self._sparse.count():
            # Possible after a crash between the two writes; the next upsert of the same
            # chunks repairs it, and the relational store stays the source of truth.
            logger.warning(
                "embedded index %s: %d dense rows but %d BM25 documents",
                directory,
                self._dense.count(),
                self._sparse.count(),
            )

    @property
    def dimension(self) -> int:
        """Length of the vectors this index stores."""
        return self._dense.dimension

    def sparse_analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]:
        """(version, picklable analyzer) of the kb's BM25 index, to analyze ahead of upsert."""
        return self._sparse.analyzer(kb_id)

    @property
    def second_dense_model(self) -> str | None:
        """The second dense channel's model id; None when there is none."""
        return None if self._second is None else self._second.model_id

    @property
    def follows(self) -> bool:
        """Whether this index only follows another process's writes (read-only)."""
        return self._follow

    def _check_writable(self) -> None:
        if self._follow:
            raise IndexReadOnly(f"the index {self._directory} is open read-only beside the "
                                "process that writes it; write through that process")

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None:
        """Insert or replace chunks (by chunk_id) in every store."""
        self._check_writable()
        # A kb whose BM25 index is broken, a bad batch (the dense store validates shapes
        # first) and a failing second encoder fail before any store changes.
        self._sparse.check_writable(record.kb_id for record in records)
        second = None
        if self._second is not None and records:
            self._second.store()  # opened before the primary write: its lag check sees before
            second = self._second.encode(records)
        self._dense.upsert(records, vectors)
        crash_point("dense_written")
        if self._second is not None and second is not None:
            self._second.write(records, second)
            crash_point("second_dense_written")
        self._sparse.upsert(records)

    def update_records(self, records: Sequence[IndexRecord]) -> None:
        """Replace the filter fields (version window, scope) of chunks held, keeping vectors."""
        self._check_writable()
        self._sparse.check_writable(record.kb_id for record in records)
        updated = set(self._dense.update_records(records))
        if self._second is not None:
            self._second.update_records(records)
        self._sparse.upsert([record for record in records if record.chunk_id in updated])

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Remove chunks by id from every store."""
        self._check_writable()
        ids = list(chunk_ids)
        self._dense.delete_chunks(ids)
        if self._second is not None:
            self._second.delete_chunks(ids)
        self._sparse.delete_chunks(ids)

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document from every store."""
        self._check_writable()
        self._dense.delete_document(document_id)
        if self._second is not None:
            self._second.delete_document(document_id)
        self._sparse.delete_document(document_id)

    def document_chunk_ids(self, kb_id: str, document_id: str) -> set[str]:
        """The chunk ids any store holds for one document (a crash may split them)."""
        held = self._dense.document_chunk_ids(document_id) | self._sparse.document_chunk_ids(
            kb_id, document_id)
        if self._second is not None:
            held |= self._second.document_chunk_ids(document_id)
        return held

    def search_dense(
        self, vector: Vectors, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Cosine top-k among the chunks the filter allows (exact, or HNSW re-scored)."""
        return self._dense.search(vector, search_filter, limit)

    def fill_second_dense(self, records: Sequence[IndexRecord]) -> int:
        """Encode and store the records the second store lacks (chunks indexed before it was
        on); returns how many. Idempotent, so a run killed midway is simply run again."""
        self._check_writable()
        return self._second_channel().fill(records)

    def search_second_dense(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Cosine top-k of the second dense channel (the query encoded by its own model)."""
        return self._second_channel().search(query, search_filter, limit)

    def _second_channel(self) -> SecondDense:
        if self._second is None:
            raise RuntimeError("this index has no second dense channel")
        return self._second

    def search_sparse(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Raw BM25 top-k among the chunks the filter allows."""
        return self._filtered_sparse(query, search_filter, limit, lambda excluded, k: (
            self._sparse.search(query, search_filter, k, excluded)))

    def _filtered_sparse(self, query: SparseQuery, search_filter: SearchFilter, limit: int,
                         search: Search) -> list[ChannelHit]:
        """`search`'s top-`limit` under the filter: by its metadata terms where they do
        better than its whitelist, else by the whitelist, its complement or a longer page."""
        # counted, so that a dense scan running beside it takes no extra BLAS threads
        with default_budget().cpu_call():
            plan = self._dense.whitelist_plan(search_filter)
            if by_whitelist(plan) and self._sparse.takes_terms(search_filter):
                return search(None, limit)
            return search_by_complement(search, search_filter, plan, limit, lambda fetch, sift: (
                self._sparse.page(query, search_filter, fetch, sift)))

    def stale_metadata(self, kb_id: str, fingerprints: Mapping[str, int]) -> set[str]:
        """The documents of `fingerprints` (id -> the fingerprint of their metadata now) whose
        BM25 terms were written with other metadata (MetadataTermsHeld)."""
        return self._sparse.stale_metadata(kb_id, fingerprints)

    def metadata_checked(self, kb_id: str) -> str | None:
        """The facts' stamp (Repository.filter_stamp, as JSON) the kb's metadata terms were
        last found to agree with, if the kb's BM25 index has not been written since."""
        return self._sparse.metadata_checked(kb_id)

    def record_metadata_checked(self, kb_id: str, facts: str) -> None:
        """Note that the kb's metadata terms, as committed now, agree with the facts at
        `facts` (best effort)."""
        self._sparse.record_metadata_checked(kb_id, facts)

    def count(self) -> int:
        """Number of live chunks (dense rows)."""
        return self._dense.count()

    def second_dense_count(self) -> int | None:
        """Live chunks of the second dense channel; None when there is none."""
        return None if self._second is None else self._second.store().count()

    def sparse_count(self) -> int:
        """Number of live chunks in the BM25 store (equals count() unless a crash split them)."""
        return self._sparse.count()

    def sparse_problems(self, kb_ids: Iterable[str]) -> dict[str, str]:
        """kb_id -> why its BM25 index cannot be read, for those of `kb_ids` (others work)."""
        return self._sparse.broken(kb_ids)

    def rebuild_sparse(self, kb_id: str) -> AbstractContextManager[KbRebuild]:
        """Rebuild one kb's BM25 index from what the block adds; switched in atomically."""
        self._check_writable()
        return self._sparse.rebuild(kb_id)

    @property
    def sparse_upgrade_pending(self) -> bool:
        """Whether an outdated BM25 layout was moved aside and every kb must be rebuilt."""
        return self._sparse.upgrade_pending

    def finish_sparse_upgrade(self) -> None:
        """Every kb's BM25 index was rebuilt after a layout upgrade."""
        self._check_writable()
        self._sparse.finish_upgrade()

    def close(self) -> None:
        """Release the BM25 writers and lock; the index can be reopened afterwards."""
        self._sparse.close()
        self._dense.close()
        if self._second is not None:
            self._second.close()

    def sparse_term_stats(self, kb_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(documents, document frequency per term) of one kb's BM25 index, for idf weights."""
        return self._sparse.term_stats(kb_id, terms)

    def search_sparse_weighted(
        self, terms: Sequence[tuple[str, float]], search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """BM25 top-k of (analyzer token, weight) pairs, e.g. a feedback-expanded query."""
        return self._filtered_sparse(terms, search_filter, limit, lambda excluded, k: (
            self._sparse.search_weighted(terms, search_filter, k, excluded)))

