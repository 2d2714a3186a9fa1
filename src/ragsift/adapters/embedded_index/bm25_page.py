"""A page of BM25 hits sifted by document key before any hit's stored fields are read.

Reading a hit's stored fields (its chunk and document ids) costs ~9 us at 100k chunks (a
block of the doc store decompressed: its cache holds a fraction of them), its document key
from the fast field ~0.35 us (2026-12-07). An unrestricted page read off under a broad
whitelist (sparse_complement.py) is 1.5 / share times longer than asked: at 50 % and 100
candidates, 300 reads, ~2.8 ms of the hybrid search's ~9 CPU-ms. So the page's hits are
sifted by key first and read only until `read` whitelisted ones are found.

Keys can collide (bm25_schema), so each hit read is checked against the whitelist by its
document id; a colliding hit is read and dropped, never kept. The score of the first hit
left unread is that of a hit the whitelist may keep, at least that of the next one it does:
a caller comparing it with the last hit read errs only towards "cannot tell".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import tantivy

from ragsift.adapters.embedded_index.bm25_schema import DOCUMENT_KEY, document_keys
from ragsift.domain.results import ChannelHit


@dataclass(frozen=True)
class Sift:
    """Which hits of a page to keep (`allowed` documents) and how many to read at most."""

    allowed: frozenset[str]
    read: int


@dataclass(frozen=True)
class Page:
    """A page's whitelisted hits read, by (score desc, chunk id); at most `Sift.read` of
    them, every one on the page when fewer."""

    hits: tuple[ChannelHit, ...]
    # the best score among the hits left unread that the whitelist may keep; None: none left
    next_score: float | None
    length: int  # hits on the page, whitelisted or not
    floor: float | None  # the page's lowest score; None for an empty page


def read_page(searcher: tantivy.Searcher, hits: Sequence[tuple[float, tantivy.DocAddress]],
              sift: Sift, fast_keys: bool) -> Page:
    """`hits` (a page, best first) sifted and read; `fast_keys`: the index holds document
    keys as a fast field (else every hit is read and checked by its document id)."""
    keys: Sequence[int | float | bool | None] = [None] * len(hits)
    if fast_keys and hits:
        keys = searcher.fast_field_values(DOCUMENT_KEY, [address for _, address in hits])
    wanted = document_keys(sift.allowed) if fast_keys else frozenset()
    found: list[ChannelHit] = []
    next_score = None
    for (score, address), key in zip(hits, keys, strict=True):
        if key is not None and key not in wanted:
            continue
        if len(found) >= sift.read:
            next_score = float(score)
            break
        doc = searcher.doc(address)
        document_id = str(doc.get_first("document_id"))
        if document_id in sift.allowed:
            found.append(ChannelHit(chunk_id=str(doc.get_first("chunk_id")),
                                    document_id=document_id, score=float(score)))
    found.sort(key=lambda hit: (-hit.score, hit.chunk_id))
    floor = float(hits[-1][0]) if hits else None
    return Page(tuple(found), next_score, len(hits), floor)
