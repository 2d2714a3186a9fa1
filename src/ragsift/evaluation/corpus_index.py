"""Builds, resumes or reuses the knowledge base of an evaluation corpus, without file parsers.

Each passage becomes one document (deterministic id from kb id + corpus id, metadata
{"corpus_id"}) whose sha256 fingerprints the passage and the chunk layout. A passage whose
document is READY with the same fingerprint is skipped, so an interrupted build resumes and a
finished one is reused; the embedding cache makes re-embedding what was already done free.
Per batch, chunks reach the index before their document is stored, and the document turns
READY only after its chunks: search never sees half a passage.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import (
    CHILD_LEVEL,
    Chunk,
    Document,
    DocumentStatus,
    KnowledgeBase,
    Locator,
    chunk_id,
)
from ragsift.evaluation.datasets import Passage
from ragsift.evaluation.progress import Advance, ProgressFactory, no_progress
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.embedding import embed_in_batches
from ragsift.ingestion.parsers.base import ParsedDocument, Section
from ragsift.ports import Embedder, Repository, SearchIndex

logger = logging.getLogger(__name__)

# e5 reads 512 tokens, "passage: " and the two special tokens included: longer chunks are cut.
MODEL_WINDOW_TOKENS = 507


@dataclass(frozen=True)
class IndexBuild:
    """What building (or reusing) the corpus index did and how fast."""

    kb_id: str
    kb_name: str
    layout: str
    fingerprint: str
    passages: int
    reused: int
    built: int
    removed: int
    chunks_built: int
    over_model_window: int
    seconds: float
    timings_s: dict[str, float] = field(default_factory=dict)

    @property
    def passages_per_s(self) -> float | None:
        """Pipeline rate of this run (prepare + embed + index + store), when it built anything."""
        return self.built / self.seconds if self.built and self.seconds > 0 else None


def passage_text(passage: Passage) -> str:
    """What is embedded and indexed for a passage: title and text."""
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text


def document_id(kb_id: str, corpus_id: str) -> str:
    """The deterministic document id of a corpus passage in a knowledge base."""
    return hashlib.sha256(f"{kb_id}:{corpus_id}".encode()).hexdigest()[:32]


def _fingerprint(passage: Passage, layout: str) -> str:
    key = json.dumps([passage.id, passage.title, passage.text, layout], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def measure_embedder(embedder: Embedder, texts: Sequence[str], batch_size: int) -> float | None:
    """Passages per second of `embedder` alone on `texts` (one untimed warm-up call first)."""
    if not texts:
        return None
    embedder.embed_passages(texts[:1])
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        embedder.embed_passages(texts[start : start + batch_size])
    elapsed = time.perf_counter() - started
    return len(texts) / elapsed if elapsed > 0 else None


class CorpusIndexer:
    """Indexes passages into one knowledge base: embed in batches, upsert, store in bulk."""

    def __init__(
        self,
        repository: Repository,
        index: SearchIndex,
        embedder: Embedder,
        chunker: Chunker | None = None,
        layout: str = "passage",
        embed_batch: int = 16,
        write_batch: int = 512,
    ) -> None:
        if embed_batch < 1 or write_batch < 1:
            raise ValueError("embed_batch and write_batch must be positive")
        self._repository = repository
        self._index = index
        self._embedder = embedder
        self._chunker = chunker
        self._layout = layout
        self._embed_batch = embed_batch
        self._write_batch = write_batch

    def build(
        self, kb: KnowledgeBase, passages: Sequence[Passage],
        progress: ProgressFactory = no_progress,
    ) -> IndexBuild:
        """Make `kb` hold exactly `passages` (READY), doing only the missing work."""
        started = time.perf_counter()
        timings: dict[str, float] = {"prepare": 0.0, "embed": 0.0, "index": 0.0, "store": 0.0}
        shas = {p.id: _fingerprint(p, self._layout) for p in passages}
        existing = {d.id: d for d in self._repository.list_documents(kb.id)}
        removed = self._remove_stale(kb, existing, shas)
        pending = [
            p for p in passages
            if (doc := existing.get(document_id(kb.id, p.id))) is None
            or doc.status != DocumentStatus.READY or doc.sha256 != shas[p.id]
        ]
        stage = time.perf_counter()
        prepared = self._prepare(kb, pending, shas, progress)
        timings["prepare"] = time.perf_counter() - stage
        total_children = sum(len(children) for _, _, children in prepared)
        advance = progress("embedding passages", total_children) if prepared else None
        batch: list[tuple[Document, list[Chunk], list[Chunk]]] = []
        size = 0
        for item in prepared:
            batch.append(item)
            size += len(item[2])
            if size >= self._write_batch:
                self._write(batch, timings, advance)
                batch, size = [], 0
        if batch:
            self._write(batch, timings, advance)
        over = sum(1 for _, _, cs in prepared for c in cs if c.token_count > MODEL_WINDOW_TOKENS)
        if over:
            logger.warning("%d chunks exceed the e5 window (%d tokens) and are truncated when "
                           "embedded; --chunk splits them", over, MODEL_WINDOW_TOKENS)
        corpus_fingerprint = hashlib.sha256("".join(shas[p.id] for p in passages).encode())
        return IndexBuild(
            kb_id=kb.id, kb_name=kb.name, layout=self._layout,
            fingerprint=corpus_fingerprint.hexdigest(), passages=len(passages),
            reused=len(passages) - len(pending), built=len(pending), removed=removed,
            chunks_built=total_children, over_model_window=over,
            seconds=time.perf_counter() - started,
            timings_s={name: round(value, 3) for name, value in timings.items()},
        )

    def _remove_stale(
        self, kb: KnowledgeBase, existing: dict[str, Document], shas: dict[str, str]
    ) -> int:
        """Drop documents whose passage left the corpus or changed; resume leftovers are redone."""
        wanted = {document_id(kb.id, corpus_id): sha for corpus_id, sha in shas.items()}
        stale_chunks: list[str] = []
        removed = 0
        for doc in existing.values():
            changed = wanted.get(doc.id) != doc.sha256
            if changed:
                stale_chunks.extend(c.id for c in self._repository.list_chunks(doc.id))
            if changed or doc.status != DocumentStatus.READY:
                # An unfinished document with the same fingerprint re-upserts the same chunk
                # ids, so only the facts need clearing; a changed one leaves the index too.
                self._repository.delete_document(doc.id)
                removed += 1
        if stale_chunks:
            self._index.delete_chunks(stale_chunks)
        if removed:
            logger.info("knowledge base %s: removed %d stale or unfinished documents",
                        kb.name, removed)
        return removed

    def _prepare(
        self, kb: KnowledgeBase, passages: Sequence[Passage], shas: dict[str, str],
        progress: ProgressFactory,
    ) -> list[tuple[Document, list[Chunk], list[Chunk]]]:
        """(document, all chunks, children) for every passage to build."""
        advance = progress("chunking passages", len(passages)) if self._chunker else None
        prepared = []
        for passage in passages:
            doc_id = document_id(kb.id, passage.id)
            document = Document(
                id=doc_id, kb_id=kb.id, filename=passage.id, media_type="text/plain",
                sha256=shas[passage.id], size=len(passage_text(passage).encode("utf-8")),
                status=DocumentStatus.INDEXING, metadata={"corpus_id": passage.id},
            )
            chunks = self._chunks(kb, doc_id, passage)
            prepared.append((document, chunks, [c for c in chunks if c.level == CHILD_LEVEL]))
            if advance is not None:
                advance(1)
        return prepared

    def _chunks(self, kb: KnowledgeBase, doc_id: str, passage: Passage) -> list[Chunk]:
        heading = (passage.title,) if passage.title else ()
        if self._chunker is not None and passage.text:
            section = Section(heading_path=heading, text=passage.text, locator=Locator())
            parsed = ParsedDocument(media_type="text/plain", sections=(section,))
            chunks = self._chunker.chunk(doc_id, kb.id, parsed)
            if any(c.level == CHILD_LEVEL for c in chunks):
                return [self._titled(c, passage.title) for c in chunks]
        text = passage_text(passage)
        return [Chunk(
            id=chunk_id(doc_id, CHILD_LEVEL, 0, text), document_id=doc_id, kb_id=kb.id,
            parent_id=None, level=CHILD_LEVEL, ordinal=0, heading_path=heading,
            text=text, token_count=self._embedder.count_tokens(text),
        )]

    def _titled(self, chunk: Chunk, title: str) -> Chunk:
        """A child that carries its passage's title, so the title is embedded and indexed."""
        if chunk.level != CHILD_LEVEL or not title:
            return chunk
        text = f"{title}\n{chunk.text}"
        return chunk.model_copy(update={
            "id": chunk_id(chunk.document_id, chunk.level, chunk.ordinal, text),
            "text": text, "token_count": self._embedder.count_tokens(text),
        })

    def _write(
        self, batch: Sequence[tuple[Document, list[Chunk], list[Chunk]]],
        timings: dict[str, float], advance: Advance | None,
    ) -> None:
        children = [c for _, _, cs in batch for c in cs]
        stage = time.perf_counter()
        vectors = embed_in_batches(
            self._embedder, [c.text for c in children], self._embed_batch, advance
        )
        timings["embed"] += time.perf_counter() - stage
        stage = time.perf_counter()
        records = [
            IndexRecord(chunk_id=c.id, document_id=c.document_id, kb_id=c.kb_id, text=c.text)
            for c in children
        ]
        self._index.upsert(records, vectors)
        timings["index"] += time.perf_counter() - stage
        stage = time.perf_counter()
        for document, chunks, _ in batch:
            self._repository.add_document(document)
            self._repository.replace_chunks(document.id, chunks)
            self._repository.set_status(document.id, DocumentStatus.READY)
        timings["store"] += time.perf_counter() - stage
