"""Labels for a live knowledge base: documents named by filename, key or id, chunks by id.

A labels line is `{"query": text, "id"?: query id, "relevant": [entry, ...]}` where an entry is
- a string: a document id, else a document's key or filename (as ingested), else a chunk id;
- `{"document": name or id, "grade"?: n}`: a document only;
- `{"chunk": chunk id, "grade"?: n}`: a chunk only.
The grade defaults to 1; 0 means judged not relevant. The `{name: grade}` object form of the
BEIR path and `ragsift tune` is read too (each key as a string entry).

Every entry must name exactly one READY document or chunk of the KB: an unknown or ambiguous
name fails the run, since skipping a label would drop a miss and inflate the scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import Chunk, Document
from ragsift.domain.results import RetrievalHit
from ragsift.evaluation.datasets import EvalQuery, Qrels, jsonl_rows

EntryKind = Literal["any", "document", "chunk"]
MAX_LISTED = 10  # names listed in an error about unknown or ambiguous labels


@dataclass(frozen=True, slots=True)
class LabelEntry:
    kind: EntryKind
    name: str
    grade: int


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    query: EvalQuery
    entries: tuple[LabelEntry, ...]


@dataclass(frozen=True)
class KbJudgments:
    """Judgments resolved against one KB: every label at its document, chunk labels as well."""

    queries: tuple[EvalQuery, ...]
    documents: Qrels  # query id -> document id -> grade (chunk labels at their document)
    chunks: Qrels  # query id -> chunk id -> grade, only queries with chunk labels

    def limited(self, max_queries: int) -> KbJudgments:
        if max_queries < 1:
            raise InvalidInput("the query limit must be at least 1")
        queries = self.queries[:max_queries]
        ids = {q.id for q in queries}
        return KbJudgments(queries, {q: r for q, r in self.documents.items() if q in ids},
                           {q: r for q, r in self.chunks.items() if q in ids})


def _grade(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{where}: a grade must be a non-negative integer, got {value!r}")
    return value


def _entry(where: str, raw: Any) -> LabelEntry:
    if isinstance(raw, str) and raw:
        return LabelEntry("any", raw, 1)
    if isinstance(raw, dict):
        kinds = [k for k in ("document", "chunk") if k in raw]
        unknown = set(raw) - {"document", "chunk", "grade"}
        if len(kinds) == 1 and not unknown and isinstance(raw[kinds[0]], str) and raw[kinds[0]]:
            kind: EntryKind = "document" if kinds[0] == "document" else "chunk"
            return LabelEntry(kind, raw[kinds[0]], _grade(where, raw.get("grade", 1)))
    raise InvalidInput(f"{where}: a relevant entry is a name, {{\"document\": name, "
                       f"\"grade\": n}} or {{\"chunk\": id, \"grade\": n}}; got {raw!r}")


def _entries(where: str, relevant: Any) -> tuple[LabelEntry, ...]:
    if isinstance(relevant, dict):  # {name: grade}, the form `ragsift tune` reads
        return tuple(LabelEntry("any", str(name), _grade(where, grade))
                     for name, grade in relevant.items())
    if isinstance(relevant, list) and relevant:
        return tuple(_entry(where, raw) for raw in relevant)
    raise InvalidInput(f"{where}: field 'relevant' must be a non-empty list (or a name->grade "
                       "object)")


def load_kb_labels(path: Path) -> tuple[LabelledQuery, ...]:
    """The labelled queries of a JSONL file, in file order (ids q1..qn unless given)."""
    labelled: list[LabelledQuery] = []
    seen: set[str] = set()
    for number, row in jsonl_rows(path):
        where = f"{path}:{number}"
        text, query_id = row.get("query"), row.get("id", f"q{len(labelled) + 1}")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"{where}: field 'query' must be a non-empty string")
        if not isinstance(query_id, str | int) or isinstance(query_id, bool):
            raise InvalidInput(f"{where}: field 'id' must be a string")
        if str(query_id) in seen:
            raise InvalidInput(f"{where}: duplicate query id {query_id!r}")
        seen.add(str(query_id))
        labelled.append(LabelledQuery(EvalQuery(str(query_id), text),
                                      _entries(where, row.get("relevant"))))
    if not labelled:
        raise InvalidInput(f"{path}: no labelled queries")
    return tuple(labelled)


def label_names(labelled: Iterable[LabelledQuery]) -> list[str]:
    """Every name an entry could resolve through as a chunk id (for one bulk chunk lookup)."""
    return sorted({e.name for q in labelled for e in q.entries if e.kind != "document"})


class _Names:
    """The KB's READY documents by id and by key/filename, and the chunks labels named."""

    def __init__(self, documents: Sequence[Document], chunks: Sequence[Chunk]) -> None:
        self.ids = {d.id for d in documents}
        self.by_name: dict[str, set[str]] = {}
        for document in documents:
            for name in {document.filename, document.key} - {None, ""}:
                self.by_name.setdefault(str(name), set()).add(document.id)
        self.chunk_document = {c.id: c.document_id for c in chunks if c.document_id in self.ids}

    def document(self, name: str) -> list[str]:
        """The ids of the documents `name` names (a fresh list: callers may keep it)."""
        return [name] if name in self.ids else sorted(self.by_name.get(name, ()))


def resolve_kb_labels(
    labelled: Sequence[LabelledQuery], documents: Sequence[Document], chunks: Sequence[Chunk],
) -> KbJudgments:
    """Judgments keyed by document id (and chunk id); InvalidInput lists what did not resolve."""
    names = _Names(documents, chunks)
    by_document: Qrels = {}
    by_chunk: Qrels = {}
    unknown: list[str] = []
    ambiguous: list[str] = []
    for item in labelled:
        grades = by_document.setdefault(item.query.id, {})
        for entry in item.entries:
            matches = names.document(entry.name) if entry.kind != "chunk" else []
            if len(matches) > 1:
                ambiguous.append(f"{entry.name!r} ({', '.join(matches)})")
                continue
            if matches:
                doc_id = matches[0]
            elif entry.kind != "document" and entry.name in names.chunk_document:
                doc_id = names.chunk_document[entry.name]
                chunk_grades = by_chunk.setdefault(item.query.id, {})
                chunk_grades[entry.name] = max(entry.grade, chunk_grades.get(entry.name, 0))
            else:
                unknown.append(entry.name)
                continue
            grades[doc_id] = max(entry.grade, grades.get(doc_id, 0))
    _raise_unresolved(unknown, ambiguous)
    queries = tuple(item.query for item in labelled)
    return KbJudgments(queries, by_document, by_chunk)


def _raise_unresolved(unknown: list[str], ambiguous: list[str]) -> None:
    problems = []
    if ambiguous:
        problems.append(f"{len(ambiguous)} labels name several documents (use the document id): "
                        + "; ".join(ambiguous[:MAX_LISTED]))
    if unknown:
        distinct = list(dict.fromkeys(unknown))
        problems.append(f"{len(unknown)} labels ({len(distinct)} names) name no READY document "
                        "(id, key or filename) or chunk of the knowledge base: "
                        + ", ".join(repr(n) for n in distinct[:MAX_LISTED])
                        + (f" and {len(distinct) - MAX_LISTED} more" if len(distinct) > MAX_LISTED
                           else ""))
    if problems:
        # a skipped label would hide a miss and inflate every score, so the run stops
        raise InvalidInput("; ".join(problems))


def chunk_ranking(hits: Sequence[RetrievalHit], labelled: Mapping[str, int]) -> list[str]:
    """Hits as chunk ids in rank order: a hit stands for a labelled chunk it is, is the child
    of, or merged (auto-merge); otherwise for itself. A chunk counts once, at its first hit."""
    ranked: dict[str, None] = {}
    for hit in hits:
        unit = hit.chunk_id
        if unit not in labelled:
            related = [c for c in (hit.parent_id, *hit.merged_from) if c and c in labelled]
            unit = related[0] if related else unit
        ranked.setdefault(unit, None)
    return list(ranked)
