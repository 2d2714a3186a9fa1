"""Labelled retrieval sets: a BEIR-style folder or JSONL labels, loaded into an EvalDataset."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.domain.errors import InvalidInput

logger = logging.getLogger(__name__)

Qrels = dict[str, dict[str, int]]
QUERY_FILES = ("queries.dev.jsonl", "queries.jsonl")
_QRELS_HEADERS = {"query-id", "query_id", "qid", "query"}


@dataclass(frozen=True, slots=True)
class Passage:
    """One corpus entry; relevance is judged on its id."""

    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class EvalQuery:
    id: str
    text: str


@dataclass(frozen=True)
class EvalDataset:
    """A corpus, the queries to run and their judgments (restricted to the loaded queries)."""

    name: str
    corpus: tuple[Passage, ...]
    queries: tuple[EvalQuery, ...]
    qrels: Qrels

    def judged_queries(self) -> int:
        """Loaded queries with at least one relevant document: the ones that get scored."""
        return sum(1 for q in self.queries if any(g > 0 for g in self.qrels.get(q.id, {}).values()))

    def limited(self, max_queries: int) -> EvalDataset:
        """The first `max_queries` queries (file order) with their judgments, for smoke runs."""
        if max_queries < 1:
            raise InvalidInput("the query limit must be at least 1")
        queries = self.queries[:max_queries]
        wanted = {q.id for q in queries}
        return EvalDataset(self.name, self.corpus, queries,
                           {qid: rel for qid, rel in self.qrels.items() if qid in wanted})


def jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; InvalidInput names the bad line."""
    if not path.is_file():
        raise InvalidInput(f"no such file: {path}")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(value, dict):
                raise InvalidInput(f"{path}:{number}: expected a JSON object")
            yield number, value


def _field(path: Path, number: int, row: dict[str, Any], name: str, default: str | None = None
           ) -> str:
    value = row.get(name, default)
    if isinstance(value, int) and not isinstance(value, bool) and name == "id":
        return str(value)  # some BEIR corpora use numeric ids
    if not isinstance(value, str):
        raise InvalidInput(f"{path}:{number}: field {name!r} must be a string")
    return value


def load_corpus(path: Path) -> tuple[Passage, ...]:
    """corpus.jsonl lines {"id", "title", "text"}; passages with neither title nor text skipped."""
    passages: list[Passage] = []
    seen: set[str] = set()
    empty = 0
    for number, row in jsonl_rows(path):
        passage = Passage(
            id=_field(path, number, row, "id"),
            title=_field(path, number, row, "title", "").strip(),
            text=_field(path, number, row, "text").strip(),
        )
        if not passage.id:
            raise InvalidInput(f"{path}:{number}: empty id")
        if passage.id in seen:
            raise InvalidInput(f"{path}:{number}: duplicate corpus id {passage.id!r}")
        seen.add(passage.id)
        if not passage.title and not passage.text:
            empty += 1
            continue
        passages.append(passage)
    if empty:
        logger.warning("%s: skipped %d passages with neither title nor text", path, empty)
    if not passages:
        raise InvalidInput(f"{path}: no passages")
    return tuple(passages)


def load_queries(path: Path) -> tuple[EvalQuery, ...]:
    """Query lines {"id", "text"} in file order; ids must be unique."""
    queries: list[EvalQuery] = []
    seen: set[str] = set()
    for number, row in jsonl_rows(path):
        query = EvalQuery(_field(path, number, row, "id"), _field(path, number, row, "text"))
        if query.id in seen:
            raise InvalidInput(f"{path}:{number}: duplicate query id {query.id!r}")
        seen.add(query.id)
        queries.append(query)
    return tuple(queries)


def read_qrels(path: Path) -> Qrels:
    """BEIR TSV `query-id corpus-id score` (header optional) or TREC `qid 0 docid grade` lines."""
    if not path.is_file():
        raise InvalidInput(f"no such file: {path}")
    qrels: Qrels = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) == 4:
                parts = [parts[0], parts[2], parts[3]]
            if len(parts) != 3:
                raise InvalidInput(f"{path}:{number}: expected 3 tab-separated columns "
                                   f"(query-id, corpus-id, score), got {len(parts)}")
            if number == 1 and parts[0].lower() in _QRELS_HEADERS:
                continue
            try:
                grade = int(parts[2])
            except ValueError as exc:
                raise InvalidInput(f"{path}:{number}: score {parts[2]!r} is not an integer"
                                   ) from exc
            qrels.setdefault(parts[0], {})[parts[1]] = grade
    return qrels


def load_jsonl_labels(path: Path) -> tuple[tuple[EvalQuery, ...], Qrels]:
    """Lines {"query": text, "relevant": {doc id: grade}}; queries get ids q1..qn."""
    queries: list[EvalQuery] = []
    qrels: Qrels = {}
    for number, row in jsonl_rows(path):
        text = row.get("query")
        relevant = row.get("relevant")
        if not isinstance(text, str):
            raise InvalidInput(f"{path}:{number}: field 'query' must be a string")
        if not isinstance(relevant, dict) or not all(
            isinstance(g, int) and not isinstance(g, bool) for g in relevant.values()
        ):
            raise InvalidInput(f"{path}:{number}: field 'relevant' must map doc ids to integers")
        query_id = f"q{len(queries) + 1}"
        queries.append(EvalQuery(query_id, text))
        qrels[query_id] = {str(doc): grade for doc, grade in relevant.items()}
    return tuple(queries), qrels


def _is_labels_file(path: Path) -> bool:
    """True when the first object of a JSONL file has the {"query", "relevant"} form."""
    for _, row in jsonl_rows(path):
        return "relevant" in row and "query" in row
    return False


def load_beir_folder(
    path: Path, queries_file: Path | None = None, qrels_file: Path | None = None
) -> EvalDataset:
    """corpus.jsonl + a queries file (default queries.dev.jsonl, then queries.jsonl) + qrels.

    The queries file may also be JSONL labels, which bring their own judgments. Judgments of
    queries that are not loaded are dropped; those naming an unknown corpus id are kept (they
    stay unreachable, as trec_eval would count them) and logged.
    """
    if not path.is_dir():
        raise InvalidInput(f"not a dataset folder: {path}")
    corpus = load_corpus(path / "corpus.jsonl")
    if queries_file is None:
        found = [path / name for name in QUERY_FILES if (path / name).is_file()]
        if not found:
            raise InvalidInput(f"{path}: no {' or '.join(QUERY_FILES)}; pass --queries")
        queries_file = found[0]
    if _is_labels_file(queries_file):
        queries, qrels = load_jsonl_labels(queries_file)
    else:
        queries = load_queries(queries_file)
        qrels = read_qrels(qrels_file or path / "qrels.tsv")
    if not queries:
        raise InvalidInput(f"{queries_file}: no queries")
    loaded = {q.id for q in queries}
    known = {p.id for p in corpus}
    kept: Qrels = {}
    unknown = 0
    for query_id, relevant in qrels.items():
        if query_id not in loaded:
            continue
        unknown += sum(1 for doc_id in relevant if doc_id not in known)
        kept[query_id] = dict(relevant)
    if unknown:
        logger.warning("%s: %d judgments name documents absent from the corpus", path, unknown)
    dataset = EvalDataset(path.resolve().name, corpus, queries, kept)
    if not dataset.judged_queries():
        raise InvalidInput(f"none of the {len(queries)} queries of {queries_file} has a relevant "
                           "document in the judgments: do the query ids match?")
    return dataset
