"""What the LangChain and LlamaIndex retriever tests share: a document long enough to have
neighbours, the metadata every hit carries, and a check that an import stays lazy."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from ragsift.client import RetrievalHit

# one long section: several 32-token passages under one parent, so Small2Big has neighbours
LEAVE = b"""# Employee handbook

## Annual leave

Every employee gets fifteen days of annual leave per calendar year. Leave requests go to the
line manager at least two weeks ahead. Up to five unused days can be carried over to the next
year; carried-over days expire at the end of March. Part-time staff get leave in proportion to
their contract. Leave cannot be paid out except when the contract ends. Public holidays that
fall inside a leave period are not counted as leave days.
"""

PARKING = b"""# Facilities

## Parking

Staff park in garage B under the north tower. A parking permit costs 40 dollars per month and
is renewed every January at the reception desk.
"""
PARKING_PERMIT = "How much is a parking permit?"
CARRY_OVER = "How many unused leave days can be carried over to the next year?"
HOTEL_LIMIT = "What is the hotel limit per night in London?"

METADATA_KEYS = {
    "chunk_id", "document_id", "kb_id", "parent_id", "filename", "heading_path", "locator",
    "citation",
    "rank", "dense_rank", "dense_score", "sparse_rank", "sparse_score", "second_dense_rank",
    "second_dense_score", "fusion_score",
    "rerank_score", "final_score", "relevance", "retrieval_sources", "merged_from", "chunk_text",
    "context_text", "context_chunk_ids", "document_metadata",
}


def expected_metadata(hit: RetrievalHit) -> dict[str, Any]:
    """The metadata a retriever should attach to `hit`, field by field from the client's hit."""
    return {
        "chunk_id": hit.chunk_id, "document_id": hit.document_id, "kb_id": hit.kb_id,
        "parent_id": hit.parent_id,
        "filename": hit.filename, "heading_path": list(hit.heading_path),
        "locator": hit.locator.model_dump(exclude_none=True),
        "citation": " › ".join([hit.filename, *hit.heading_path]), "rank": hit.rank,
        "dense_rank": hit.dense_rank, "dense_score": hit.dense_score,
        "sparse_rank": hit.sparse_rank, "sparse_score": hit.sparse_score,
        "second_dense_rank": hit.second_dense_rank, "second_dense_score": hit.second_dense_score,
        "fusion_score": hit.fusion_score, "rerank_score": hit.rerank_score,
        "final_score": hit.fusion_score if hit.rerank_score is None else hit.rerank_score,
        "relevance": hit.relevance,
        "retrieval_sources": list(hit.retrieval_sources), "merged_from": list(hit.merged_from),
        "chunk_text": hit.text, "context_text": hit.context_text,
        "context_chunk_ids": list(hit.context_chunk_ids),
        "document_metadata": dict(hit.metadata or {}),
    }


def modules_loaded_by(statement: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after running `statement`."""
    listing = "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    code = f"{statement}\nimport sys\n{listing}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())
