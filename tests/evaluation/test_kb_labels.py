"""Labels for a live KB: the schema, resolution by id, key, filename or chunk, and chunk hits."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.conftest import JsonlWriter
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import (
    CHILD_LEVEL,
    PARENT_LEVEL,
    Chunk,
    Document,
    DocumentStatus,
    Locator,
)
from ragsift.domain.results import RetrievalHit
from ragsift.evaluation.kb_labels import (
    LabelEntry,
    chunk_ranking,
    label_names,
    load_kb_labels,
    resolve_kb_labels,
)
from ragsift.evaluation.metrics import evaluate_run


def document(doc_id: str, filename: str, key: str | None = None) -> Document:
    return Document(id=doc_id, kb_id="kb", filename=filename, media_type="text/markdown",
                    sha256=None, size=1, status=DocumentStatus.READY, key=key or filename)


def chunk(chunk_id: str, doc_id: str, parent: str | None = None) -> Chunk:
    return Chunk(id=chunk_id, document_id=doc_id, kb_id="kb", parent_id=parent,
                 level=CHILD_LEVEL if parent else PARENT_LEVEL, ordinal=0, heading_path=(),
                 text="t", token_count=1)


DOCUMENTS = [document("d1", "a.pdf"), document("d2", "b.md", "guides/b.md"),
             document("d3", "notes.md", "team-a/notes.md"),
             document("d4", "notes.md", "team-b/notes.md")]
CHUNKS = [chunk("c-parent", "d2"), chunk("c-child", "d2", parent="c-parent")]


def test_entries_are_names_documents_or_chunks_with_an_optional_grade(
    tmp_path: Path, jsonl: JsonlWriter
) -> None:
    path = jsonl(tmp_path / "labels.jsonl", [
        {"query": "年假几天", "relevant": ["a.pdf", {"document": "b.md", "grade": 2},
                                          {"chunk": "c-child"}]},
        {"id": "own", "query": "hotel", "relevant": {"d1": 0, "guides/b.md": 1}},
    ])
    first, second = load_kb_labels(path)
    assert first.query.id == "q1" and first.entries == (
        LabelEntry("any", "a.pdf", 1), LabelEntry("document", "b.md", 2),
        LabelEntry("chunk", "c-child", 1))
    assert second.query.id == "own" and second.entries[0] == LabelEntry("any", "d1", 0)
    # only names that may be chunk ids are looked up as chunks
    assert label_names([first, second]) == ["a.pdf", "c-child", "d1", "guides/b.md"]


@pytest.mark.parametrize(("relevant", "message"), [
    ([], "non-empty list"),
    ([{"document": "a", "chunk": "b"}], "a relevant entry is"),
    ([{"document": "a", "grade": -1}], "non-negative integer"),
    ([{"document": "a", "grade": True}], "non-negative integer"),
    ([{"file": "a"}], "a relevant entry is"),
])
def test_malformed_entries_name_their_line(
    tmp_path: Path, jsonl: JsonlWriter, relevant: object, message: str
) -> None:
    path = jsonl(tmp_path / "labels.jsonl", [{"query": "q", "relevant": relevant}])
    with pytest.raises(InvalidInput, match=f"labels.jsonl:1: .*{message}"):
        load_kb_labels(path)


def test_names_resolve_to_documents_and_chunk_labels_count_at_both_levels(
    tmp_path: Path, jsonl: JsonlWriter
) -> None:
    path = jsonl(tmp_path / "labels.jsonl", [
        {"query": "q", "relevant": ["a.pdf", {"document": "team-b/notes.md", "grade": 2},
                                    {"chunk": "c-child", "grade": 3}]},
        {"query": "r", "relevant": ["d2", "guides/b.md"]},
        # the same names again in another query: each label resolves on its own
        {"query": "s", "relevant": ["a.pdf", "b.md", "team-b/notes.md"]},
    ])
    judged = resolve_kb_labels(load_kb_labels(path), DOCUMENTS, CHUNKS)
    assert judged.documents == {"q1": {"d1": 1, "d4": 2, "d2": 3}, "q2": {"d2": 1},
                                "q3": {"d1": 1, "d2": 1, "d4": 1}}
    assert judged.chunks == {"q1": {"c-child": 3}}


def test_an_ambiguous_filename_fails_naming_its_candidates(
    tmp_path: Path, jsonl: JsonlWriter
) -> None:
    path = jsonl(tmp_path / "labels.jsonl", [{"query": "q", "relevant": ["notes.md"]}])
    with pytest.raises(InvalidInput, match=r"several documents.*'notes.md' \(d3, d4\)"):
        resolve_kb_labels(load_kb_labels(path), DOCUMENTS, CHUNKS)


def test_unknown_labels_fail_the_run_listing_at_most_ten(
    tmp_path: Path, jsonl: JsonlWriter
) -> None:
    ghosts = [f"ghost-{i:02d}.pdf" for i in range(12)]
    path = jsonl(tmp_path / "labels.jsonl", [
        {"query": "q", "relevant": ["a.pdf", *ghosts]},
        # a chunk id given as a document does not resolve: the kind is kept
        {"query": "r", "relevant": [{"document": "c-child"}]},
    ])
    with pytest.raises(InvalidInput) as caught:
        resolve_kb_labels(load_kb_labels(path), DOCUMENTS, CHUNKS)
    message = str(caught.value)
    assert message.startswith("13 labels (13 names) name no READY document")
    assert "'ghost-09.pdf'" in message and "'ghost-10.pdf'" not in message
    assert message.endswith("and 3 more")


def _hit(chunk_id: str, parent: str | None = None, merged: tuple[str, ...] = ()) -> RetrievalHit:
    return RetrievalHit(
        rank=1, chunk_id=chunk_id, document_id="d", filename="", text="", heading_path=(),
        locator=Locator(), parent_id=parent, dense_rank=None, dense_score=None,
        sparse_rank=None, sparse_score=None, fusion_score=1.0, retrieval_sources=("dense",),
        merged_from=merged,
    )


def test_a_hit_counts_for_a_labelled_chunk_it_is_or_is_the_child_of() -> None:
    hits = [_hit("x1"), _hit("k1", parent="P"), _hit("k2", parent="P"), _hit("M", merged=("m1",)),
            _hit("C")]
    ranked = chunk_ranking(hits, {"P": 1, "m1": 1, "C": 2})
    # the second child of P counts no more: P is found once, at rank 2
    assert ranked == ["x1", "P", "m1", "C"]
    scores = evaluate_run({"q": ranked}, {"q": {"P": 1, "m1": 1, "C": 2}}, ks=(3,))
    assert scores["q"]["recall@3"] == pytest.approx(2 / 3)
