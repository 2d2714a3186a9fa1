"""FAQ import: JSONL or CSV files of question/answer pairs into the facts and the FAQ index.

JSONL: one object per line, {"question": ..., "answer": ..., "source": ...?}; blank lines are
skipped and other keys ignored. CSV: a header naming question and answer (and optionally
source) columns, in any order and case. Files are UTF-8 with or without a BOM (UTF-16 with a BOM
and GB18030 are accepted too). A malformed row fails the whole import, with every bad line named,
before anything is stored.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.domain.errors import InvalidInput
from ragsift.domain.faq import FaqEntry, faq_entry_id
from ragsift.domain.models import KnowledgeBase
from ragsift.faults import crash_point
from ragsift.ingestion.embedding import Progress, embed_in_batches
from ragsift.ingestion.parsers.decoding import decode_text
from ragsift.ports import Embedder, Repository, SearchIndex
from ragsift.retrieval.faq import faq_records

logger = logging.getLogger(__name__)

"""Called with the number of questions just embedded."""

MAX_REPORTED_ERRORS = 20
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)


@dataclass(frozen=True, slots=True)
class FaqRow:
    """One question/answer pair as read from a file, with the line it starts on."""

    question: str
    answer: str
    source: str | None
    line: int


@dataclass(frozen=True, slots=True)
class FaqImportOutcome:
    """How many rows were read, added, and skipped as already stored or repeated."""

    rows: int
    added: int

    @property
    def duplicates(self) -> int:
        return self.rows - self.added


def _field(record: dict[str, Any], name: str, required: bool) -> tuple[str | None, str | None]:
    """(value, problem): a stripped string, None for an absent optional field, or a problem."""
    value = record.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, f"missing {name}" if required else None
    if not isinstance(value, str):
        return None, f"{name} must be a string, not {type(value).__name__}"
    return value.strip(), None


def _row(record: dict[str, Any], line: int, problems: list[str]) -> FaqRow | None:
    question, q_problem = _field(record, "question", required=True)
    answer, a_problem = _field(record, "answer", required=True)
    source, s_problem = _field(record, "source", required=False)
    found = [p for p in (q_problem, a_problem, s_problem) if p]
    if found:
        problems.append(f"line {line}: {', '.join(found)}")
        return None
    assert question is not None and answer is not None
    return FaqRow(question, answer, source, line)


def parse_jsonl(text: str) -> tuple[list[FaqRow], list[str]]:
    """Rows and per-line problems of JSONL text."""
    rows: list[FaqRow] = []
    problems: list[str] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"line {line}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {line}: expected a JSON object, got {type(record).__name__}")
            continue
        row = _row(record, line, problems)
        if row is not None:
            rows.append(row)
    return rows, problems


def parse_csv(text: str) -> tuple[list[FaqRow], list[str]]:
    """Rows and per-line problems of CSV text with a question,answer[,source] header."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    names = [name.strip().lower() for name in header or []]
    missing = [name for name in ("question", "answer") if name not in names]
    if missing:
        raise InvalidInput(
            f"line 1: the CSV header must name question and answer columns "
            f"(missing {', '.join(missing)}; found {names or 'nothing'})"
        )
    rows: list[FaqRow] = []
    problems: list[str] = []
    line = reader.line_num + 1
    for values in reader:
        if any(value.strip() for value in values):
            record = {name: value for name, value in zip(names, values, strict=False)}
            row = _row(record, line, problems)
            if row is not None:
                rows.append(row)
        line = reader.line_num + 1  # a quoted field may span lines
    return rows, problems


def parse_faq_file(name: str, data: bytes) -> list[FaqRow]:
    """Every row of a JSONL or CSV file (by suffix); InvalidInput names each bad line."""
    suffix = Path(name).suffix.lower()
    if suffix not in JSONL_SUFFIXES + CSV_SUFFIXES:
        raise InvalidInput(f"{name}: FAQ files must be .jsonl or .csv, not {suffix or 'no suffix'}")
    try:
        text = decode_text(data)
    except InvalidInput as exc:
        raise InvalidInput(f"{name}: {exc}") from exc
    try:
        rows, problems = parse_jsonl(text) if suffix in JSONL_SUFFIXES else parse_csv(text)
    except (InvalidInput, csv.Error) as exc:
        raise InvalidInput(f"{name}: {exc}") from exc
    if problems:
        shown = "; ".join(problems[:MAX_REPORTED_ERRORS])
        more = len(problems) - MAX_REPORTED_ERRORS
        raise InvalidInput(
            f"{name}: {len(problems)} malformed row(s), nothing imported: {shown}"
            + (f"; and {more} more" if more > 0 else "")
        )
    if not rows:
        raise InvalidInput(f"{name}: no question/answer rows")
    return rows


class FaqImporter:
    """Stores FAQ entries in the facts and their vectors in the FAQ index, skipping known pairs."""

    def __init__(
        self, repository: Repository, index: SearchIndex, embedder: Embedder,
        max_file_bytes: int, batch_size: int = 16,
    ) -> None:
        if max_file_bytes < 1 or batch_size < 1:
            raise ValueError("max_file_bytes and batch_size must be positive")
        self._repository = repository
        self._index = index
        self._embedder = embedder
        self._max_bytes = max_file_bytes
        self._batch = batch_size

    def read(self, path: Path) -> list[FaqRow]:
        """The rows of one JSONL or CSV file; its size is checked before it is read."""
        if not path.is_file():
            raise InvalidInput(f"no such file: {path}")
        size = path.stat().st_size
        if size > self._max_bytes:
            raise InvalidInput(f"{path.name}: {size} bytes, over the limit of {self._max_bytes}")
        return parse_faq_file(path.name, path.read_bytes())

    def import_path(
        self, kb: KnowledgeBase, path: Path, progress: Progress | None = None
    ) -> FaqImportOutcome:
        """Import one JSONL or CSV file: every row is valid or nothing is stored."""
        return self.import_rows(kb, self.read(path), progress)

    def import_rows(
        self, kb: KnowledgeBase, rows: Sequence[FaqRow], progress: Progress | None = None
    ) -> FaqImportOutcome:
        """Embed the questions of new pairs, index them, then store them as facts."""
        entries: dict[str, FaqEntry] = {}
        for row in rows:
            faq_id = faq_entry_id(kb.id, row.question, row.answer)
            entries.setdefault(faq_id, FaqEntry(
                id=faq_id, kb_id=kb.id, question=row.question, answer=row.answer,
                source=row.source,
            ))
        known = {e.id for e in self._repository.get_faq_entries(list(entries))}
        fresh = [entry for faq_id, entry in entries.items() if faq_id not in known]
        if fresh:
            # Index first, facts last: an entry is searchable only once it is in the facts.
            # Entry ids derive from their content, so a re-run after a kill in between
            # rewrites the same rows; a failed write removes its rows at once.
            vectors = self._embed(fresh, progress)
            try:
                self._index.upsert(faq_records(fresh), vectors)
                crash_point("index_written")
                added = self._repository.add_faq_entries(fresh)
            except BaseException:
                with contextlib.suppress(Exception):
                    self._index.delete_chunks([entry.id for entry in fresh])
                raise
        else:
            added = 0
        logger.info("FAQ import into %s: %d rows, %d added", kb.name, len(rows), added)
        return FaqImportOutcome(rows=len(rows), added=added)

    def delete_all(self, kb: KnowledgeBase) -> int:
        """Remove every FAQ entry of `kb` from the index and the facts; how many there were."""
        ids = [entry.id for entry in self._repository.list_faq_entries(kb.id)]
        self._index.delete_chunks(ids)
        return self._repository.delete_faq_entries(kb.id)

    def _embed(self, entries: Sequence[FaqEntry], progress: Progress | None) -> np.ndarray:
        # Dense vectors embed the question only; BM25 gets question and answer.
        questions = [entry.question for entry in entries]
        return embed_in_batches(self._embedder, questions, self._batch, progress)
