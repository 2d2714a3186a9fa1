"""Value factories shared by the SQL repository tests."""

from __future__ import annotations

from ragsift.domain.models import (
    Chunk,
    Document,
    DocumentScope,
    DocumentStatus,
    KnowledgeBase,
    Locator,
)


def make_kb(kb_id: str = "kb1", name: str | None = None) -> KnowledgeBase:
    return KnowledgeBase(
        id=kb_id,
        name=name or f"name-{kb_id}",
        embedding_model="multilingual-e5-small",
        embedding_dim=384,
        analyzer={"tokenizer": "jieba", "lowercase": True},
    )


def make_document(
    doc_id: str = "doc1",
    kb_id: str = "kb1",
    sha256: str | None = None,
    status: DocumentStatus = DocumentStatus.PENDING,
) -> Document:
    return Document(
        id=doc_id,
        kb_id=kb_id,
        filename=f"{doc_id}.pdf",
        media_type="application/pdf",
        sha256=sha256 if sha256 is not None else f"sha-{doc_id}",
        size=1234,
        status=status,
        category="manual",
        scope=DocumentScope(source="upload", tenant_id="t1", dataset_id="ds1", visibility="public"),
        metadata={"author": "张三", "tags": ["a", "b"]},
    )


def make_chunks(doc_id: str = "doc1", kb_id: str = "kb1", children: int = 3) -> list[Chunk]:
    """One parent with `children` children, each on its own page."""
    parent = Chunk(
        id=f"{doc_id}-p0",
        document_id=doc_id,
        kb_id=kb_id,
        parent_id=None,
        level=0,
        ordinal=0,
        heading_path=("第一章", "Intro"),
        locator=Locator(page=1),
        text="parent text",
        token_count=10,
    )
    kids = [
        Chunk(
            id=f"{doc_id}-c{i}",
            document_id=doc_id,
            kb_id=kb_id,
            parent_id=parent.id,
            level=1,
            ordinal=i,
            heading_path=("第一章", "Intro"),
            locator=Locator(page=i + 1, sheet="Sheet1", cell_range=f"A{i}:B{i}"),
            text=f"child {i}",
            token_count=3,
        )
        for i in range(children)
    ]
    return [parent, *kids]
