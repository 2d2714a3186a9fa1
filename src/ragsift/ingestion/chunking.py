"""Parent/child chunking: sections become parents, children fit the embedder's token budget.

Where the document has the structure (top-level headings, sheets, slides, pages), parents of one
such part are grouped under a section chunk, a third level (sections.py).

Children's token counts are exact (the embedder's tokenizer); parents carry an estimate.

Children are packed from whole sentences; a sentence longer than the budget is cut between
words (jieba words, which keep English words whole), so no word is ever split. Only a single
"word" longer than the whole budget (a URL, a hash) is cut by characters. The overlap
repeats the trailing whole sentences of the previous child that fit in the overlap budget.

Sections made of blocks (sheet rows, records, located PDF paragraphs) are packed block by block
instead (blocks.py): a block that fits a child is never cut, and each chunk is located by the
blocks it holds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import rjieba

from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, Chunk, Locator
from ragsift.ingestion.blocks import BlockPacker, overlap_start
from ragsift.ingestion.chunk_factory import make_chunk
from ragsift.ingestion.parsers.base import ParsedDocument
from ragsift.ingestion.sections import add_sections
from ragsift.ports import Tokenizer

_FILL = 0.95
_PARAGRAPHS = re.compile(r"\n\s*\n")
# A sentence ends at CJK or Latin terminal punctuation (plus closing quotes) or a line break.
_SENTENCE = re.compile(r".+?(?:[。！？!?；;…]+[”’\"'）)]*\s*|\.(?:\s+|$)|\n|$)", re.S)


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"\d+")
_OTHER = re.compile(r"[^\sA-Za-z\d\u3400-\u9fff\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """e5 (XLM-R) token count estimated from character classes; about +-5% over a chunk.

    Fitted by least squares on sentences of the sample corpus. Packing uses it so the real
    tokenizer (the slow part of chunking) reads each child once, to verify it.
    """
    words = _LATIN.findall(text)
    digits = _DIGITS.findall(text)
    score = (
        0.70 * len(_CJK.findall(text))
        + 0.69 * len(words) + 0.12 * sum(map(len, words))
        + 1.07 * len(digits) + 0.034 * sum(map(len, digits))
        + 0.8 * len(_OTHER.findall(text))
    )
    return math.ceil(score)


@dataclass(frozen=True, slots=True)
class ChildOrigin:
    """Where a child chunk came from: its section (an index into the parsed sections) and
    the blocks of that section it holds (empty for a section chunked by sentences)."""

    chunk_id: str
    section: int
    blocks: tuple[int, ...]
    locator: Locator


@dataclass(frozen=True, slots=True)
class ChunkedDocument:
    """A document's chunks (sections, parents, then children) and each child's origin."""

    chunks: list[Chunk]
    origins: tuple[ChildOrigin, ...]


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    tokens: int  # estimated; children are verified with the real tokenizer


class Chunker:
    """Turns a parsed document into parent chunks (level 0) and child chunks (level 1), and
    with `sections`, section chunks (level -1) over the parents of one structural part."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        chunk_tokens: int = 256,
        overlap_tokens: int = 32,
        parent_max_tokens: int = 1024,
        sections: bool = True,
    ) -> None:
        if chunk_tokens < 8:
            raise ValueError("chunk_tokens must be at least 8")
        if not 0 <= overlap_tokens < chunk_tokens // 2:
            raise ValueError("overlap_tokens must be >= 0 and less than half of chunk_tokens")
        if parent_max_tokens < chunk_tokens:
            raise ValueError("parent_max_tokens must be at least chunk_tokens")
        self._tokenizer = tokenizer
        self._budget = chunk_tokens
        self._overlap = overlap_tokens
        self._parent_budget = parent_max_tokens
        self._sections = sections

    def sized(self, chunk_tokens: int, overlap_tokens: int, parent_max_tokens: int) -> Chunker:
        """This chunker when its sizes are these, else one with the same tokenizer (a KB's
        own chunking; ValueError for sizes that do not fit together)."""
        if (chunk_tokens, overlap_tokens, parent_max_tokens) == (
                self._budget, self._overlap, self._parent_budget):
            return self
        return Chunker(self._tokenizer, chunk_tokens, overlap_tokens, parent_max_tokens)

    def chunk(self, document_id: str, kb_id: str, parsed: ParsedDocument) -> list[Chunk]:
        """Sections, parents, then children; children's ordinals run across the document."""
        return self.chunk_document(document_id, kb_id, parsed).chunks

    def chunk_document(
        self, document_id: str, kb_id: str, parsed: ParsedDocument
    ) -> ChunkedDocument:
        """chunk(), and where each child came from (to link the document's assets)."""
        parents: list[Chunk] = []
        children: list[Chunk] = []
        origins: list[ChildOrigin] = []
        packer = BlockPacker(self, document_id, kb_id)
        for index, section in enumerate(parsed.sections):
            if section.blocks:
                for child, blocks in packer.pack(section, parents, children):
                    origins.append(ChildOrigin(child.id, index, blocks, child.locator))
                continue
            for group in self._parent_groups(section.text):
                parent_text = "".join(unit.text for unit in group).strip()
                if not parent_text:
                    continue
                parent = make_chunk(
                    document_id, kb_id, None, PARENT_LEVEL, len(parents), section, parent_text,
                    sum(unit.tokens for unit in group),
                )
                parents.append(parent)
                for text, tokens in self._children(group):
                    child = make_chunk(
                        document_id, kb_id, parent.id, CHILD_LEVEL, len(children), section,
                        text, tokens,
                    )
                    children.append(child)
                    origins.append(ChildOrigin(child.id, index, (), child.locator))
        sections = (add_sections(document_id, kb_id, parents, self._parent_budget)
                    if self._sections else [])
        return ChunkedDocument(sections + parents + children, tuple(origins))

    @property
    def child_tokens(self) -> int:
        return self._budget

    @property
    def overlap_tokens(self) -> int:
        return self._overlap

    estimate = staticmethod(estimate_tokens)

    @property
    def parent_tokens(self) -> int:
        return self._parent_budget

    def count(self, text: str) -> int:
        """The exact token count of `text` (the embedder's tokenizer)."""
        return self._tokenizer.count_tokens(text)

    _count = count

    def sentence_pieces(self, text: str, budget: int) -> list[tuple[str, int]]:
        """`text` cut into sentences (words when one exceeds `budget`), with token estimates."""
        saved, self._budget = self._budget, budget
        try:
            return [(unit.text, unit.tokens) for sentence in _SENTENCE.findall(text)
                    for unit in self._fit(sentence)]
        finally:
            self._budget = saved

    def _units(self, text: str) -> list[_Unit]:
        """Sentences (words when a sentence alone exceeds the budget), paragraph breaks kept.

        Sentence units make the overlap land on sentence boundaries; a paragraph break
        rides on the paragraph's last unit so joined text keeps its layout.
        """
        units: list[_Unit] = []
        for paragraph in filter(None, (p.strip() for p in _PARAGRAPHS.split(text))):
            pieces = [unit for s in _SENTENCE.findall(paragraph) for unit in self._fit(s)]
            if pieces:
                last = pieces[-1]
                pieces[-1] = _Unit(last.text.rstrip() + "\n\n", last.tokens)
            units.extend(pieces)
        return units

    def _fit(self, text: str) -> list[_Unit]:
        if not text:
            return []
        estimate = estimate_tokens(text)
        # only a sentence that may exceed the budget pays for an exact count
        if estimate <= self._budget * 0.8 or self._count(text) <= self._budget:
            return [_Unit(text, estimate)]
        return self._halve([w for w in rjieba.cut(text) if w])

    def _halve(self, words: Sequence[str]) -> list[_Unit]:
        """Split an over-budget run of words in halves until each half fits.

        Halving costs O(log n) tokenizer calls per piece instead of one call per word.
        """
        if len(words) == 1:  # one word beyond the budget: cut by characters
            word = words[0]
            half = max(1, len(word) // 2)
            return self._fit(word[:half]) + self._fit(word[half:])
        middle = len(words) // 2
        units: list[_Unit] = []
        for part in (words[:middle], words[middle:]):
            text = "".join(part)
            fits = self._count(text) <= self._budget
            units.extend([_Unit(text, estimate_tokens(text))] if fits else self._halve(part))
        return units

    def _parent_groups(self, text: str) -> list[list[_Unit]]:
        groups: list[list[_Unit]] = [[]]
        used = 0
        for unit in self._units(text):
            if groups[-1] and used + unit.tokens > self._parent_budget:
                groups.append([])
                used = 0
            groups[-1].append(unit)
            used += unit.tokens
        return [group for group in groups if group]

    def _children(self, units: Sequence[_Unit]) -> list[tuple[str, int]]:
        """Greedy packing with a tail overlap; each child's real token count is verified.

        `scale` learns how far the estimate is off for this text (odd vocabulary, code, ...)
        from each verified child, so later children rarely need a second count.
        """
        children: list[tuple[str, int]] = []
        estimates = [unit.tokens for unit in units]
        start, scale = 0, 1.0
        while start < len(units):
            end, used = start, 0.0
            # aim a little under the budget: an unbiased estimate packed to the brim would
            # overshoot (and need a second exact count) about half the time
            while end < len(units) and used + units[end].tokens * scale <= self._budget * _FILL:
                used += units[end].tokens * scale
                end += 1
            end = max(end, start + 1)
            text, tokens = self._joined(units[start:end])
            estimate = sum(unit.tokens for unit in units[start:end])
            if estimate:
                scale = max(scale, tokens / estimate) if tokens > self._budget else (
                    0.5 * scale + 0.5 * tokens / estimate
                )
            while tokens > self._budget and end - start > 1:
                # drop about as many units as the overshoot needs, then count again
                excess = (tokens - self._budget) / max(tokens, 1)
                drop = max(1, int((end - start) * excess))
                end = max(start + 1, end - drop)
                text, tokens = self._joined(units[start:end])
            children.append((text, tokens))
            if end >= len(units):
                break
            start = overlap_start(estimates, start, end, self._overlap)
        return children

    def _joined(self, units: Sequence[_Unit]) -> tuple[str, int]:
        text = "".join(unit.text for unit in units).strip()
        return text, self._count(text)

