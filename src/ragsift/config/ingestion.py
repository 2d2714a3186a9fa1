"""How documents are prepared: batching, worker processes, chunking, OCR."""

from __future__ import annotations

import os
from typing import Literal, Self

from pydantic import Field, model_validator

from ragsift.config.concern import Concern


class IngestionSettings(Concern):
    """Ingestion."""

    # 64: the per-batch SQL and status moves cost a one-line document's ingest 1.52-1.62 ms CPU
    # at 16, 1.26-1.33 at 64 (docs/benchmarks.md, issue 16 night)
    ingest_batch_documents: int = Field(
        default=64, ge=1, le=4096,
        description="documents an ingest registers, claims and stages together (a group also "
        "closes at this many chunks to embed)",
    )
    # Two on two free cores: 2,358 vs 1,701 chunks/s in-process (median of 3,
    # docs/benchmarks.md); no faster when another process holds a core.
    prepare_workers: int = Field(
        default_factory=lambda: min(2, os.cpu_count() or 1), ge=1, le=64,
        description="processes that parse, chunk and BM25-analyze documents in `ragsift "
        "ingest`; 1 = in-process; default: min(2, CPU cores)",
    )
    # 64k: a one-file ingest of ~2 KB tokenizes ~5-8k characters (chunk counts, ids to embed)
    # at ~35 us each; the vocabulary's load costs ~1 CPU-s, what ~30k characters cost
    ingest_light_tokenizer_chars: int = Field(
        default=16384, ge=0, le=1 << 24,
        description="a `ragsift ingest` (or the files a `sync` adds or replaces) of at most "
        "this many bytes in all counts and "
        "tokenizes its texts from the e5 pieces they hold (a word list in the model cache) "
        "until it has tokenized twice this many characters, instead of loading e5's whole "
        "vocabulary first (~1 CPU-s, ~290 MB): the same counts; 0 = always load it",
    )
    prepare_isolation: bool = Field(
        default=True,
        description="parse every document in a worker process, under the time and memory "
        "limits below (false: in the calling process, without them; for debugging)",
    )
    prepare_timeout_s: float = Field(
        default=300.0, gt=0, le=86400,
        description="time one document's parsing and chunking may take; then it is FAILED",
    )
    prepare_memory_mb: int = Field(
        default=2048, ge=64, le=1024 * 1024,
        description="address space a preparation worker may add to what it inherited; a "
        "document needing more is FAILED",
    )
    chunk_tokens: int = Field(
        default=256, ge=16, le=512,
        description="tokens of a chunk (L3), the unit that is embedded and searched",
    )
    chunk_overlap_tokens: int = Field(
        default=32, ge=0,
        description="tokens two neighbouring chunks share; less than half of chunk_tokens",
    )
    parent_max_tokens: int = Field(
        default=1024, ge=16,
        description="tokens of a parent (L2) that groups neighbouring chunks; at least "
        "chunk_tokens",
    )
    chunk_sections: bool = Field(
        default=True, description="write a section chunk (L1) over the parents (L2) of one "
        "top-level heading, sheet, slide or page; `ragsift reindex` adds them to older KBs",
    )
    ocr: Literal["auto", "off"] = Field(
        default="auto",
        description="OCR of scanned PDF pages and image files (needs the `ocr` extra)",
    )
    ocr_min_chars: int = Field(
        default=20, ge=1, description="a PDF page with less text-layer text than this is OCRed"
    )
    ocr_timeout_s: float = Field(
        default=120.0, gt=0, description="OCR time per document; later pages skipped, warned"
    )
    ocr_render_dpi: int = Field(
        default=150, ge=50, le=600, description="resolution of PDF pages rendered for OCR"
    )

    @model_validator(mode="after")
    def _chunk_checks(self) -> Self:
        if self.chunk_overlap_tokens >= self.chunk_tokens // 2:
            raise ValueError("chunk_overlap_tokens must be less than half of chunk_tokens")
        if self.parent_max_tokens < self.chunk_tokens:
            raise ValueError("parent_max_tokens must be at least chunk_tokens")
        return self
