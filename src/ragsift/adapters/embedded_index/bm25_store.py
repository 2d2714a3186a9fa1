"""BM25 over pre-tokenized text in an on-disk tantivy index, with filters as query objects."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import tantivy
from tantivy import Occur, Query

from ragsift.adapters.embedded_index.analyzer import analyze
from ragsift.domain.errors import RagsiftError
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

logger = logging.getLogger(__name__)

_HEAP_BYTES = 64_000_000
_SCOPE_FIELDS = ("source", "tenant_id", "dataset_id", "visibility")


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("document_id", stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("kb_id", *_SCOPE_FIELDS):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    # The analyzer already lowercased and segmented the text; tantivy only splits on spaces.
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    return builder.build()


class IndexInUse(RagsiftError):
    """Another process holds the index's writer lock."""

    code = "index_in_use"


class TantivyBm25Store:
    """BM25 search with kb, document and scope filters that never change the scores."""

    def __init__(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # Opens the index when it exists (the schema must match) and creates it otherwise.
        self._index = tantivy.Index(_schema(), path=str(directory), reuse=True)
        self._schema = self._index.schema
        # One writer for the store's lifetime: tantivy allows one per index, and opening
        # one per batch would pay thread start-up and lock-file churn each time.
        try:
            self._writer: tantivy.IndexWriter | None = self._index.writer(
                heap_size=_HEAP_BYTES, num_threads=1
            )
        except ValueError as exc:
            if "LockBusy" not in str(exc):
                raise
            raise IndexInUse(
                f"the index in {directory} is open in another ragsift process; the embedded "
                "backend allows one process per data directory (stop the other one, or use "
                "another --data-dir)"
            ) from exc
        self._index.reload()
        self._searcher = self._index.searcher()
        logger.debug("opened BM25 store %s with %d docs", directory, self._searcher.num_docs)

    def count(self) -> int:
        """Number of live documents (one per chunk) in the last committed view."""
        return int(self._searcher.num_docs)

    # ---- writes -------------------------------------------------------------------------

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        """Insert or replace chunks by chunk_id; the last occurrence wins inside one batch."""
        if not records:
            return
        latest = {record.chunk_id: record for record in records}
        documents = [_document(record) for record in latest.values()]
        with self._lock:
            writer = self._open_writer()
            # Deletes only hit documents added before them, so the adds below survive.
            for chunk_id in latest:
                writer.delete_documents_by_term("chunk_id", chunk_id)
            for document in documents:
                writer.add_document(document)
            self._commit(writer)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Remove these chunks; unknown ids are ignored."""
        with self._lock:
            writer = self._open_writer()
            for chunk_id in set(chunk_ids):
                writer.delete_documents_by_term("chunk_id", chunk_id)
            self._commit(writer)

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document."""
        with self._lock:
            writer = self._open_writer()
            writer.delete_documents_by_term("document_id", document_id)
            self._commit(writer)

    def close(self) -> None:
        """Finish merges and release the writer (and its lock file); searches keep working."""
        with self._lock:
            if self._writer is not None:
                # wait_merging_threads consumes the writer, which drops tantivy's lock.
                self._writer.wait_merging_threads()
                self._writer = None

    # ---- search -------------------------------------------------------------------------

    def search(self, query: str, search_filter: SearchFilter, limit: int) -> list[ChannelHit]:
        """Top-`limit` chunks by raw BM25 among those the filter allows."""
        # Repeated query tokens are deduplicated: search-mode segmentation already repeats
        # the pieces of compound words, and counting them again would over-weight them.
        tokens = list(dict.fromkeys(analyze(query)))
        if not tokens or limit <= 0:
            return []
        filter_query = self._filter_query(search_filter)
        if filter_query is None:
            return []
        text_query = Query.boolean_query(
            [(Occur.Should, Query.term_query(self._schema, "text", token)) for token in tokens]
        )
        # The filter is a MUST clause with a constant score of 0, so it restricts the matches
        # without adding to or otherwise altering the BM25 score; the text disjunction is a
        # MUST too, so a document must contain at least one query token.
        combined = Query.boolean_query(
            [
                (Occur.Must, text_query),
                (Occur.Must, Query.const_score_query(filter_query, 0.0)),
            ]
        )
        searcher = self._searcher
        hits = searcher.search(combined, limit, count=False).hits
        results: list[ChannelHit] = []
        for score, address in hits:
            document = searcher.doc(address)
            results.append(
                ChannelHit(
                    chunk_id=str(document.get_first("chunk_id")),
                    document_id=str(document.get_first("document_id")),
                    score=float(score),
                )
            )
        # Stable order among equal scores, whatever the segment layout.
        results.sort(key=lambda hit: (-hit.score, hit.chunk_id))
        return results

    # ---- internals ----------------------------------------------------------------------

    def _filter_query(self, search_filter: SearchFilter) -> Query | None:
        """The filter as term queries (never parsed text); None when it allows nothing."""
        clauses = [Query.term_query(self._schema, "kb_id", search_filter.kb_id)]
        restrictions: dict[str, frozenset[str]] = dict(search_filter.scope_fields())
        if search_filter.document_ids is not None:
            restrictions["document_id"] = search_filter.document_ids
        for name, values in restrictions.items():
            if not values:
                return None
            clauses.append(Query.term_set_query(self._schema, name, sorted(values)))
        return Query.boolean_query([(Occur.Must, clause) for clause in clauses])

    def _open_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            raise RuntimeError("the BM25 store is closed")
        return self._writer

    def _commit(self, writer: tantivy.IndexWriter) -> None:
        writer.commit()
        self._index.reload()
        # Publishing a new searcher object is atomic; running searches keep the old view.
        self._searcher = self._index.searcher()


def _document(record: IndexRecord) -> tantivy.Document:
    fields: dict[str, str] = {
        "chunk_id": record.chunk_id,
        "document_id": record.document_id,
        "kb_id": record.kb_id,
        "text": " ".join(analyze(record.text)),
    }
    # A None scope value is left out rather than stored as a sentinel, so no filter value
    # (not even an empty string or a look-alike sentinel) can ever match it.
    for name in _SCOPE_FIELDS:
        value = getattr(record, name)
        if value is not None:
            fields[name] = value
    return tantivy.Document(**fields)
