"""FAQ files: JSONL or CSV question/answer pairs, with an optional data scope per row.

JSONL: one object per line, {"question": ..., "answer": ..., "source": ...?}; blank lines are
skipped and other keys ignored. CSV: a header naming question and answer (and optionally
source) columns, in any order and case. Both may also give a row's scope: `tenant_id`,
`dataset_id`, `visibility` and `allowed_roles` (a JSON list of strings, or the roles
comma-separated, as in CSV); a value a row gives overrides the import's default for that
field, and a field the row leaves out or empty takes the default. Files are UTF-8 with or
without a BOM (UTF-16 with a BOM and GB18030 are accepted too). A malformed row fails the whole
import, with every bad line named, before anything is stored.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.domain.errors import InvalidInput
from ragsift.domain.faq import FaqContent, clean_roles, clean_text
from ragsift.domain.models import DocumentScope
from ragsift.ingestion.parsers.decoding import decode_text

MAX_REPORTED_ERRORS = 20
SCOPE_TEXT_FIELDS = ("tenant_id", "dataset_id", "visibility")
SCOPE_ROLES = "allowed_roles"
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)


@dataclass(frozen=True, slots=True)
class FaqRow:
    """One question/answer pair as read from a file, with the line it starts on and the
    scope it gives (None: the import's default)."""

    question: str
    answer: str
    source: str | None
    line: int
    tenant_id: str | None = None
    dataset_id: str | None = None
    visibility: str | None = None
    allowed_roles: tuple[str, ...] | None = None

    def content(self, defaults: DocumentScope | None = None) -> FaqContent:
        """The entry this row becomes: its own values, the defaults where it gives none."""
        base = defaults or DocumentScope()
        return FaqContent(
            question=self.question, answer=self.answer,
            source=self.source or clean_text(base.source),
            tenant_id=self.tenant_id or clean_text(base.tenant_id),
            dataset_id=self.dataset_id or clean_text(base.dataset_id),
            visibility=self.visibility or clean_text(base.visibility),
            allowed_roles=self.allowed_roles or clean_roles(base.allowed_roles),
        )


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


def _roles(record: dict[str, Any]) -> tuple[tuple[str, ...] | None, str | None]:
    """(roles, problem): allowed_roles as a list of strings or comma-separated; None if none."""
    value = record.get(SCOPE_ROLES)
    if isinstance(value, str):
        value = value.split(",")
    if value is None:
        return None, None
    if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
        return None, f"{SCOPE_ROLES} must be a list of strings or comma-separated roles"
    return clean_roles(value) or None, None


def _row(record: dict[str, Any], line: int, problems: list[str]) -> FaqRow | None:
    question, q_problem = _field(record, "question", required=True)
    answer, a_problem = _field(record, "answer", required=True)
    source, s_problem = _field(record, "source", required=False)
    scope = {name: _field(record, name, required=False) for name in SCOPE_TEXT_FIELDS}
    roles, r_problem = _roles(record)
    found = [p for p in (q_problem, a_problem, s_problem,
                         *(problem for _, problem in scope.values()), r_problem) if p]
    if found:
        problems.append(f"line {line}: {', '.join(found)}")
        return None
    assert question is not None and answer is not None
    return FaqRow(question, answer, source, line, tenant_id=scope["tenant_id"][0],
                  dataset_id=scope["dataset_id"][0], visibility=scope["visibility"][0],
                  allowed_roles=roles)


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
