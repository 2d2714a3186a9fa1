"""One knowledge base's tantivy index, and the helpers both BM25 stores use over their kbs.

The store-wide lock file is bm25_lock.py; the shared schema, documents and queries are
bm25_schema.py.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import tantivy
from tantivy import Query

from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION, analyzer_for
from ragsift.adapters.embedded_index.bm25_layout import (
    ANALYZER_FILE,
    IndexInUse,
    SparseIndexBroken,
    kb_directory_name,
    missing_meta,
    outdated_schema_error,
)

# the old import path of the lock and the schema's functions, kept for their callers
from ragsift.adapters.embedded_index.bm25_lock import lock_root as lock_root
from ragsift.adapters.embedded_index.bm25_lock import unlock_root as unlock_root
from ragsift.adapters.embedded_index.bm25_page import Page, Sift, read_page
from ragsift.adapters.embedded_index.bm25_schema import (
    DOCUMENT_KEY,
    METADATA_FINGERPRINT,
    Restrictions,
    bm25_query,
    document,
)
from ragsift.adapters.embedded_index.bm25_schema import filter_clauses as filter_clauses
from ragsift.adapters.embedded_index.bm25_schema import schema as schema
from ragsift.adapters.embedded_index.bm25_terms import changed_documents
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

_HEAP_BYTES = 64_000_000

# a text to analyze, or index terms with their weights (an expanded query)
SparseQuery = str | Sequence[tuple[str, float]]


logger = logging.getLogger(__name__)
_TOLD_OLDER: set[Path] = set()


class KbIndex:
    """One kb's index: its own BM25 statistics, a published searcher and a lazy writer.

    The owner serialises writes; `searcher` is replaced atomically after each commit, so
    searches read it without a lock and keep the view they started with.
    """

    def __init__(self, directory: Path, schema_: tantivy.Schema) -> None:
        """Open (or create) the index; any error means its files are damaged or unreadable."""
        directory.mkdir(exist_ok=True)
        if missing_meta(directory):
            raise FileNotFoundError(f"meta.json is missing beside the index files in {directory}")
        self._directory = directory
        self.analyzer_version = _analyzer_version(directory)
        self._analyze = analyzer_for(self.analyzer_version)
        # Opens the index when it exists (the schema must match) and creates it otherwise;
        # an index built before document keys or metadata terms opens with its own schema.
        self.keyed = self.terms = True
        try:
            self._index = tantivy.Index(schema_, path=str(directory), reuse=True)
        except ValueError as exc:
            if "schema does not match" not in str(exc):
                raise
            self._index = self._older_layout(directory, exc)
        self._fingerprints: tuple[tantivy.Searcher, dict[int, int]] | None = None
        self._reading = threading.Lock()
        self._schema = self._index.schema
        self._writer: tantivy.IndexWriter | None = None
        self._index.reload()
        self.searcher: tantivy.Searcher = self._index.searcher()

    def _older_layout(self, directory: Path, mismatch: ValueError) -> tantivy.Index:
        """The index in `directory` opened with the schema of an older layout (told once a
        process: a follower reopens often), else SparseLayoutOutdated."""
        for keyed in (True, False):
            try:
                index = tantivy.Index(schema(keyed=keyed, terms=False), path=str(directory),
                                      reuse=True)
            except ValueError:
                continue
            self.keyed, self.terms = keyed, False
            if directory not in _TOLD_OLDER:
                _TOLD_OLDER.add(directory)
                logger.info("the BM25 index in %s predates %s: its metadata filters go by "
                            "document (`ragsift rebuild-sparse` adds them)", directory,
                            "metadata terms" if keyed else "document keys and metadata terms")
            return index
        raise outdated_schema_error(directory) from mismatch

    def indexed_fingerprints(self, wait: bool = False) -> dict[int, int] | None:
        """document key -> the metadata fingerprint its chunks were indexed with (-1 when
        they differ), over the current searcher's chunks; read once per commit (40 ms at
        100k chunks; 0.5-1.0 s and ~180 MB held meanwhile at 1M). None while another thread
        reads it, unless `wait`: a search filters by its whitelist rather than wait."""
        searcher = self.searcher
        cached = self._fingerprints
        if cached is not None and cached[0] is searcher:
            return cached[1]
        if not self._reading.acquire(blocking=wait):
            return None
        try:
            found = _fingerprints_of(searcher)
        finally:
            self._reading.release()
        self._fingerprints = (searcher, found)
        return found

    @property
    def directory(self) -> Path:
        """Where this kb's index files lie."""
        return self._directory

    def stale_metadata(self, fingerprints: Mapping[str, int]) -> set[str]:
        """The documents of `fingerprints` (id -> the fingerprint of their metadata now)
        whose chunks here were indexed with other metadata; none where the index holds no
        metadata terms (it filters by document)."""
        if not self.terms:
            return set()
        return set(changed_documents(fingerprints, self.indexed_fingerprints(wait=True) or {})[0])

    def analyze(self, text: str) -> list[str]:
        """Tokens of `text` by the analyzer this index was built with (for queries too)."""
        return self._analyze(text)

    def document(self, record: IndexRecord) -> tantivy.Document:
        """The tantivy document of one chunk, analyzed like the rest of this index.

        Tokens analyzed ahead (record.analyzed) are used only when they come from this
        index's analyzer version; queries are analyzed with that version too.
        """
        analyzed = record.analyzed
        if analyzed is not None and analyzed.version == self.analyzer_version:
            return document(record, tokens=analyzed.tokens, keyed=self.keyed,
                            terms=self.terms)
        return document(record, self._analyze, keyed=self.keyed, terms=self.terms)

    def search(self, query: str, restrictions: Restrictions, limit: int) -> list[ChannelHit]:
        """Top-`limit` chunks by raw BM25 among those `restrictions` allow (see filter_clauses)."""
        terms = self._terms(query)
        return self._hits(terms, restrictions, limit) if terms else []

    def search_weighted(
        self, terms: Sequence[tuple[str, float]], restrictions: Restrictions, limit: int
    ) -> list[ChannelHit]:
        """Like `search` for index terms given with weights (an expanded query): each term's
        BM25 score is multiplied by its weight. Terms are used as they are, never parsed;
        weights must be finite and positive (others are dropped)."""
        weighted = self._terms(terms)
        return self._hits(weighted, restrictions, limit) if weighted else []

    def page(self, query: SparseQuery, restrictions: Restrictions, fetch: int,
             sift: Sift) -> Page:
        """The top-`fetch` page of `search` or `search_weighted` (by `query`'s type),
        sifted and read as bm25_page.read_page does."""
        terms = self._terms(query)
        if not terms:
            return Page((), None, 0, None)
        searcher = self.searcher
        found = bm25_query(self._schema, terms, restrictions.on(searcher),
                           restrictions.excluded)
        return read_page(searcher, searcher.search(found, fetch, count=False).hits, sift,
                         fast_keys=self.terms)

    def _terms(self, query: SparseQuery) -> list[tuple[str, float]]:
        """A text's analyzed tokens at weight 1, or given (term, weight) pairs merged."""
        if isinstance(query, str):
            # Repeated query tokens are deduplicated: search-mode segmentation already
            # repeats the pieces of compound words, and counting them again would
            # over-weight them.
            return [(t, 1.0) for t in dict.fromkeys(self.analyze(query))]
        merged: dict[str, float] = {}
        for term, weight in query:
            if term and math.isfinite(weight) and weight > 0:
                merged[term] = merged.get(term, 0.0) + weight
        return list(merged.items())

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(live documents, document frequency of each term) for idf; the searcher's view."""
        searcher = self.searcher
        return int(searcher.num_docs), {t: int(searcher.doc_freq("text", t)) for t in terms}

    def _hits(self, terms: Sequence[tuple[str, float]], restrictions: Restrictions,
              limit: int) -> list[ChannelHit]:
        searcher = self.searcher  # one snapshot for the restrictions and the search
        query = bm25_query(self._schema, terms, restrictions.on(searcher), restrictions.excluded)
        hits = searcher.search(query, limit, count=False).hits
        allowed = restrictions.documents  # a whitelist sent as keys, which can collide
        results: list[ChannelHit] = []
        for score, address in hits:
            doc = searcher.doc(address)
            document_id = str(doc.get_first("document_id"))
            if allowed is not None and document_id not in allowed:
                continue
            results.append(
                ChannelHit(
                    chunk_id=str(doc.get_first("chunk_id")),
                    document_id=document_id,
                    score=float(score),
                )
            )
        # Stable order among equal scores, whatever the segment layout.
        results.sort(key=lambda hit: (-hit.score, hit.chunk_id))
        return results

    def replace(
        self, records: Sequence[IndexRecord], documents: Sequence[tantivy.Document]
    ) -> None:
        """Add `documents` (of `records`), replacing the chunks of those ids, and commit."""
        writer = self.writer()
        # Deletes only hit documents added before them, so the adds below survive.
        for record in records:
            writer.delete_documents_by_term("chunk_id", record.chunk_id)
        for doc in documents:
            writer.add_document(doc)
        self.commit()

    def chunk_ids_of(self, document_id: str) -> set[str]:
        """The chunk ids this index holds for one document, as last committed."""
        searcher = self.searcher
        query = Query.term_query(self._schema, "document_id", document_id)
        limit = max(1, int(searcher.num_docs))
        found: set[str] = set()
        for _, address in searcher.search(query, limit, count=False).hits:
            found.update(searcher.doc(address)["chunk_id"])
        return found

    def contains_any(self, field: str, values: Sequence[str]) -> bool:
        """Whether a live document has one of these values in a raw-tokenized field."""
        query = Query.term_set_query(self._schema, field, list(values))
        return bool(self.searcher.search(query, 1, count=False).hits)

    def writer(self) -> tantivy.IndexWriter:
        """This kb's writer, opened on first use and kept until `close_writer`."""
        if self._writer is None:
            # One writer per kb for the store's lifetime: opening one per batch would pay
            # thread start-up and lock-file churn each time.
            try:
                self._writer = self._index.writer(heap_size=_HEAP_BYTES, num_threads=1)
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    raise
                raise IndexInUse(f"the BM25 index in {self._directory} is locked") from exc
        return self._writer

    def delete_terms(self, field: str, values: Sequence[str]) -> None:
        """Delete every document whose raw `field` is one of `values`, and commit."""
        writer = self.writer()
        for value in values:
            writer.delete_documents_by_term(field, value)
        self.commit()

    def commit(self) -> None:
        """Commit the writer and publish a searcher over the new state."""
        self.writer().commit()
        self.reload()

    def reload(self) -> None:
        """Publish a searcher over the newest commit on disk (another process's, when this
        index only follows its writer)."""
        self._index.reload()
        # Publishing a new searcher object is atomic; running searches keep the old view.
        self.searcher = self._index.searcher()

    def close_writer(self) -> None:
        """Finish merges and release the writer; the searcher keeps working."""
        if self._writer is not None:
            # wait_merging_threads consumes the writer, which drops tantivy's lock.
            self._writer.wait_merging_threads()
            self._writer = None


# (kb directory name, kb_id or None) -> its open index, None when it has none;
# SparseIndexBroken when it cannot be opened (both BM25 stores' `_kb`)
KbOpener = Callable[[str, "str | None"], "KbIndex | None"]


def live_documents(names: Iterable[str], open_kb: KbOpener) -> int:
    """Committed documents over these kb directories; one that cannot be opened counts none
    (its problem is reported by `unreadable`)."""
    total = 0
    for name in names:
        try:
            kb = open_kb(name, None)
        except SparseIndexBroken:
            continue
        if kb is not None:
            total += int(kb.searcher.num_docs)
    return total


def unreadable(kb_ids: Iterable[str], open_kb: KbOpener,
               reasons: Mapping[str, str]) -> dict[str, str]:
    """kb_id -> why its index cannot be opened (`reasons` by directory name), for those of
    `kb_ids` whose cannot."""
    found: dict[str, str] = {}
    for kb_id in kb_ids:
        name = kb_directory_name(kb_id)
        try:
            open_kb(name, kb_id)
        except SparseIndexBroken:
            found[kb_id] = reasons[name]
    return found


def kb_analyzer(kb_id: str, open_kb: KbOpener) -> tuple[int, Callable[[str], list[str]]]:
    """(version, analyzer) of the kb's index; a kb not written yet gets the current one.

    A kb whose index cannot be opened gets it too: analysis ahead of a write must not fail
    a batch (the write itself fails each document of this kb with the reason, and a rebuild
    re-analyzes everything). The analyzer is a module-level function, so it pickles into
    worker processes.
    """
    try:
        kb = open_kb(kb_directory_name(kb_id), kb_id)
    except SparseIndexBroken:
        kb = None
    version = CURRENT_VERSION if kb is None else kb.analyzer_version
    return version, analyzer_for(version)


def _fingerprints_of(searcher: tantivy.Searcher) -> dict[int, int]:
    """indexed_fingerprints' reading: every live chunk's key and fingerprint (fast fields)."""
    addresses = [address for _, address in searcher.search(
        Query.all_query(), max(1, int(searcher.num_docs)), count=False).hits]
    keys = searcher.fast_field_values(DOCUMENT_KEY, addresses)
    prints = searcher.fast_field_values(METADATA_FINGERPRINT, addresses)
    found: dict[int, int] = {}
    for key, printed in zip(keys, prints, strict=True):
        if key is None or printed is None:
            continue
        if found.setdefault(int(key), int(printed)) != printed:
            found[int(key)] = -1
    return found


def _analyzer_version(directory: Path) -> int:
    """The analyzer version of the index in `directory`; a new index gets the current one."""
    marker = directory / ANALYZER_FILE
    if marker.is_file():
        return int(json.loads(marker.read_text("utf-8"))["version"])
    if (directory / "meta.json").exists():
        return 1  # built before analyzer versions were recorded
    marker.write_text(json.dumps({"version": CURRENT_VERSION}), "utf-8")
    return CURRENT_VERSION

