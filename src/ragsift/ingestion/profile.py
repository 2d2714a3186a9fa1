"""What a knowledge base's own settings change in its documents' preparation (issue 38).

A picklable value: it travels with each job to the preparation workers, so one pool serves
every KB, each document chunked and parsed with its own KB's sizes and OCR choice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers.limits import ParseLimits


@dataclass(frozen=True, slots=True)
class IngestProfile:
    """A KB's effective chunking, OCR and asset settings (ragsift/kb_settings.py)."""

    chunk_tokens: int
    chunk_overlap_tokens: int
    parent_max_tokens: int
    ocr: str
    min_asset_pixels: int

    def chunker(self, base: Chunker) -> Chunker:
        """`base` when its sizes are these, else a chunker with the same tokenizer."""
        return base.sized(self.chunk_tokens, self.chunk_overlap_tokens, self.parent_max_tokens)

    def limits(self, base: ParseLimits | None) -> ParseLimits:
        """`base` (default limits when None) with this profile's OCR and asset settings."""
        base = base or ParseLimits()
        if base.ocr == self.ocr and base.min_asset_pixels == self.min_asset_pixels:
            return base
        return dataclasses.replace(base, ocr=self.ocr, min_asset_pixels=self.min_asset_pixels)
