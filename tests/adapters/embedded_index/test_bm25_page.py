"""A page of BM25 hits is sifted by document key before any stored field is read
(bm25_page.py): only the whitelisted hits asked for are read, a colliding key never lets a
hit in, and an index without fast keys reads and checks every hit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tantivy

from ragsift.adapters.embedded_index import bm25_page, bm25_schema
from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_page import Sift, read_page
from ragsift.adapters.embedded_index.bm25_schema import Restrictions, schema
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

DOCUMENTS = [f"{n:032x}" for n in range(1, 41)]
# lengths differ by document and term counts by chunk: no two chunks score the same
RECORDS = [IndexRecord(f"c{i:02d}-{j}", doc, "kb",
                       "meal allowance " + "travel " * (1 + j) + "filler " * i)
           for i, doc in enumerate(DOCUMENTS) for j in range(3)]
ALLOWED = frozenset(DOCUMENTS[::2])
QUERY = "travel meal"
FETCH = len(RECORDS)
UNRESTRICTED = Restrictions(())


class CountingSearcher:
    """A searcher that counts the stored documents read through it."""

    def __init__(self, searcher: tantivy.Searcher) -> None:
        self._searcher = searcher
        self.read = 0

    def doc(self, address: tantivy.DocAddress) -> tantivy.Document:
        self.read += 1
        return self._searcher.doc(address)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._searcher, name)


def _kb(directory: Path) -> KbIndex:
    kb = KbIndex(directory, schema())
    kb.replace(RECORDS, [kb.document(record) for record in RECORDS])
    kb.close_writer()
    return kb


def _whole(kb: KbIndex) -> list[ChannelHit]:
    """The page read whole: every hit's stored fields, the whitelisted kept."""
    return [hit for hit in kb.search(QUERY, UNRESTRICTED, FETCH) if hit.document_id in ALLOWED]


def _counted(kb: KbIndex) -> CountingSearcher:
    counting = CountingSearcher(kb.searcher)
    kb.searcher = counting  # type: ignore[assignment]
    return counting


def test_a_page_reads_only_the_whitelisted_hits_asked_for(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    whole = _whole(kb)
    counting = _counted(kb)
    page = kb.page(QUERY, UNRESTRICTED, FETCH, Sift(ALLOWED, 5))
    assert counting.read == 5  # of 120 hits on the page
    assert page.hits == tuple(whole[:5])
    assert page.next_score == whole[5].score
    assert (page.length, page.floor) == (FETCH, min(h.score for h in kb.search(
        QUERY, UNRESTRICTED, FETCH)))


def test_a_page_holding_fewer_whitelisted_hits_than_asked_reads_them_all(
    tmp_path: Path,
) -> None:
    kb = _kb(tmp_path)
    whole = _whole(kb)
    counting = _counted(kb)
    page = kb.page(QUERY, UNRESTRICTED, FETCH, Sift(ALLOWED, 100))
    assert page.hits == tuple(whole) and len(whole) == 60
    assert page.next_score is None
    assert counting.read == 60


def test_a_colliding_key_is_read_and_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bm25_schema, "document_key", lambda document_id: 7)  # all collide
    monkeypatch.setattr(bm25_page, "document_keys", bm25_schema.WhitelistKeys(held=100))
    kb = _kb(tmp_path)
    whole = _whole(kb)
    counting = _counted(kb)
    page = kb.page(QUERY, UNRESTRICTED, FETCH, Sift(ALLOWED, 5))
    assert page.hits == tuple(whole[:5])
    assert counting.read > 5  # the other documents' hits read to be told apart


def test_without_fast_keys_every_hit_is_read_and_checked(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    whole = _whole(kb)
    query = bm25_schema.bm25_query(schema(), [("travel", 1.0), ("meal", 1.0)], [])
    hits = kb.searcher.search(query, FETCH, count=False).hits
    counting = CountingSearcher(kb.searcher)
    page = read_page(counting, hits, Sift(ALLOWED, 5), fast_keys=False)  # type: ignore[arg-type]
    assert page.hits == tuple(whole[:5])
    assert counting.read > 5
    # the next hit may be whitelisted: its score bounds the next whitelisted one's
    assert page.next_score is not None and page.next_score >= whole[5].score
