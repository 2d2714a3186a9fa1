"""Building KB versions by reference: a document's new chunks against its stored rows.

A chunk whose row is live and identical stays as it is (shared with the versions before:
its valid_from_seq is kept and it is not embedded again). A live row the new chunks no longer
hold is retired (valid_to_seq = the draft), or deleted outright when only the draft had it.
A new chunk gets valid_from_seq = the draft. Chunk ids are primary keys and a retired row
keeps its id for the versions that still show it, so a new chunk whose id is taken by a row
with other content (or by a retired one) gets a derived id; children follow their parent's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.domain.index_records import AnalyzedText, IndexRecord
from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_terms import document_tokens
from ragsift.domain.models import CHILD_LEVEL, Chunk, Document


@dataclass(frozen=True)
class DocumentPlan:
    """How one document's chunks change in draft `draft_seq`."""

    draft_seq: int
    basis: frozenset[str]  # the live chunk ids the plan was made from
    keep: tuple[Chunk, ...]  # identical live rows, shared
    add: tuple[Chunk, ...]  # new rows, valid from the draft
    retire: tuple[Chunk, ...]  # live rows of sealed versions, retired by the draft
    drop: tuple[Chunk, ...]  # live rows only the draft held

    @property
    def changes(self) -> int:
        return len(self.add) + len(self.retire) + len(self.drop)


def derived_id(chunk_id: str, draft_seq: int) -> str:
    """The id a new chunk takes when its natural id is held by another row."""
    return hashlib.sha256(f"{chunk_id}:v{draft_seq}".encode()).hexdigest()[:32]


def _content(chunk: Chunk) -> tuple[object, ...]:
    """Everything a row holds except its id and version window."""
    return (chunk.document_id, chunk.kb_id, chunk.parent_id, chunk.level, chunk.ordinal,
            chunk.heading_path, chunk.locator, chunk.text, chunk.token_count, chunk.asset_ids)


def plan_document(chunks: Sequence[Chunk], rows: Sequence[Chunk], draft_seq: int) -> DocumentPlan:
    """Compare a document's new `chunks` with all its stored `rows` (retired ones included)."""
    by_id = {row.id: row for row in rows}
    live = {row.id: row for row in rows if row.valid_to_seq == 0}
    final: dict[str, str] = {}  # the chunker's id -> the id stored
    used: set[str] = set()
    keep: list[Chunk] = []
    add: list[Chunk] = []
    # parents first (lower level), so children can follow their parent's stored id
    for chunk in sorted(chunks, key=lambda c: (c.level, c.ordinal, c.id)):
        if chunk.parent_id is not None and chunk.parent_id in final:
            chunk = chunk.model_copy(update={"parent_id": final[chunk.parent_id]})
        candidate = chunk.id
        while True:
            if candidate not in used:
                row = by_id.get(candidate)
                if row is None:
                    add.append(chunk.model_copy(update={
                        "id": candidate, "valid_from_seq": draft_seq, "valid_to_seq": 0}))
                    break
                if row.valid_to_seq == 0 and _content(row) == _content(chunk):
                    keep.append(row)
                    break
            candidate = derived_id(candidate, draft_seq)
        used.add(candidate)
        final[chunk.id] = candidate
    kept = {row.id for row in keep}
    gone = [row for row in live.values() if row.id not in kept]
    return DocumentPlan(
        draft_seq=draft_seq, basis=frozenset(live), keep=tuple(keep), add=tuple(add),
        retire=tuple(r for r in gone if r.valid_from_seq != draft_seq),
        drop=tuple(r for r in gone if r.valid_from_seq == draft_seq),
    )


def index_record(
    document: Document, chunk: Chunk, analyzed: AnalyzedText | None = None
) -> IndexRecord:
    """The index record of one child chunk: its text, the document's scope, its window."""
    scope = document.scope
    return IndexRecord(
        chunk_id=chunk.id, document_id=document.id, kb_id=document.kb_id, text=chunk.text,
        source=scope.source, tenant_id=scope.tenant_id, dataset_id=scope.dataset_id,
        visibility=scope.visibility, allowed_roles=scope.allowed_roles,
        valid_from_seq=chunk.valid_from_seq, valid_to_seq=chunk.valid_to_seq,
        analyzed=analyzed,
        metadata_tokens=document_tokens(decode_metadata(document.metadata)),
    )


def children(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The indexed chunks among `chunks`."""
    return [chunk for chunk in chunks if chunk.level == CHILD_LEVEL]
