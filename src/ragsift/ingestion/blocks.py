"""Chunks of a section made of blocks: sheet rows, records, located PDF paragraphs.

Whole blocks are packed into children up to the token budget; only a block that alone exceeds
it is cut (by sentences, then words, as the sentence chunker does), and its pieces keep the
block's locator. A section's `header` (a table's header row and rule) opens every parent and
child, so a chunk of a table stands alone; those sections get no overlap, since rows are
records of their own. A header that would leave a child less than a quarter of its budget is
not repeated but kept once, as the section's first block.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, Chunk, Locator
from ragsift.ingestion.chunk_factory import make_chunk
from ragsift.ingestion.locators import merge_locators
from ragsift.ingestion.parsers.base import Block, Section

_FILL = 0.95  # aim under the budget: the estimate is unbiased, so the brim overshoots half the time


class ChunkSizer(Protocol):
    """What packing needs of a chunker (chunking.Chunker): its budgets and how it measures
    and cuts text. A protocol, so this module does not import the chunker that uses it."""

    @property
    def child_tokens(self) -> int: ...

    @property
    def overlap_tokens(self) -> int: ...

    @property
    def parent_tokens(self) -> int: ...

    def count(self, text: str) -> int: ...

    def estimate(self, text: str) -> int: ...

    def sentence_pieces(self, text: str, budget: int) -> list[tuple[str, int]]: ...


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str
    tokens: int  # estimated
    block: int


class BlockPacker:
    """Packs the blocks of sections into the parents and children of one document."""

    def __init__(self, chunker: ChunkSizer, document_id: str, kb_id: str) -> None:
        self._chunker = chunker
        self._document_id = document_id
        self._kb_id = kb_id

    def pack(
        self, section: Section, parents: list[Chunk], children: list[Chunk]
    ) -> list[tuple[Chunk, tuple[int, ...]]]:
        """Append the section's chunks to `parents` / `children`; each child with its blocks."""
        blocks, header = list(section.blocks), section.header.strip()
        head = header + "\n" if header else ""
        head_tokens = self._chunker.count(head) if head else 0
        offset = 0  # blocks put before the section's own (a header kept once)
        if head and self._chunker.child_tokens - head_tokens < self._chunker.child_tokens // 4:
            blocks, head, head_tokens, offset = [Block(header), *blocks], "", 0, 1
        budget = self._chunker.child_tokens - head_tokens
        overlap = 0 if head else self._chunker.overlap_tokens
        pieces = self._pieces(blocks, budget)
        made: list[tuple[Chunk, tuple[int, ...]]] = []
        for group in self._groups(pieces, self._chunker.parent_tokens - head_tokens):
            text = head + _join(group, section.separator)
            tokens = head_tokens + sum(piece.tokens for piece in group)
            parent = self._make(
                None, PARENT_LEVEL, len(parents), section, text, tokens,
                _locator(section, blocks, group),
            )
            parents.append(parent)
            for run, tokens in self._children(group, budget, overlap, head, section.separator):
                child = self._make(
                    parent.id, CHILD_LEVEL, len(children), section,
                    head + _join(run, section.separator), tokens, _locator(section, blocks, run),
                )
                children.append(child)
                held = dict.fromkeys(piece.block - offset for piece in run)
                made.append((child, tuple(index for index in held if index >= 0)))
        return made

    def _pieces(self, blocks: Sequence[Block], budget: int) -> list[_Piece]:
        pieces: list[_Piece] = []
        for index, block in enumerate(blocks):
            text = block.text.strip()
            if not text:
                continue
            estimate = self._chunker.estimate(text)
            if estimate <= budget * 0.8 or self._chunker.count(text) <= budget:
                pieces.append(_Piece(text, estimate, index))
                continue
            pieces.extend(
                _Piece(piece, tokens, index)
                for piece, tokens in self._chunker.sentence_pieces(text, budget)
            )
        return pieces

    @staticmethod
    def _groups(pieces: Sequence[_Piece], budget: int) -> list[list[_Piece]]:
        groups: list[list[_Piece]] = [[]]
        used = 0
        for piece in pieces:
            if groups[-1] and used + piece.tokens > budget:
                groups.append([])
                used = 0
            groups[-1].append(piece)
            used += piece.tokens
        return [group for group in groups if group]

    def _children(
        self, pieces: Sequence[_Piece], budget: int, overlap: int, head: str, separator: str
    ) -> list[tuple[list[_Piece], int]]:
        """Greedy runs of pieces by estimate, each verified with the exact token count."""
        runs: list[tuple[list[_Piece], int]] = []
        estimates = [piece.tokens for piece in pieces]
        start, limit = 0, self._chunker.child_tokens
        while start < len(pieces):
            end, used = start, 0
            while end < len(pieces) and used + pieces[end].tokens <= budget * _FILL:
                used += pieces[end].tokens
                end += 1
            end = max(end, start + 1)
            tokens = self._chunker.count(head + _join(pieces[start:end], separator))
            while tokens > limit and end - start > 1:
                end -= 1
                tokens = self._chunker.count(head + _join(pieces[start:end], separator))
            runs.append((list(pieces[start:end]), tokens))
            if end >= len(pieces):
                break
            start = overlap_start(estimates, start, end, overlap)
        return runs

    def _make(
        self, parent_id: str | None, level: int, ordinal: int, section: Section, text: str,
        tokens: int, locator: Locator,
    ) -> Chunk:
        return make_chunk(
            self._document_id, self._kb_id, parent_id, level, ordinal, section, text, tokens,
            locator,
        )


def overlap_start(tokens: Sequence[int], start: int, end: int, overlap: int) -> int:
    """Index where the next child starts after units [start, end): back up over whole
    trailing units (their `tokens`) that fit in `overlap`, never to `start` itself."""
    back, carried = end, 0
    while back - 1 > start and carried + tokens[back - 1] <= overlap:
        back -= 1
        carried += tokens[back]
    return back


def _join(pieces: Sequence[_Piece], separator: str) -> str:
    """Pieces of one block joined as written, blocks joined by the section's separator."""
    return separator.join(
        "".join(piece.text for piece in run).strip()
        for _, run in itertools.groupby(pieces, key=lambda piece: piece.block)
    )


def _locator(section: Section, blocks: Sequence[Block], pieces: Sequence[_Piece]) -> Locator:
    indexes = dict.fromkeys(piece.block for piece in pieces)
    return merge_locators(section.locator, [blocks[index].locator for index in indexes])
