"""JSON and JSON Lines: every record is a section of `key: value` lines.

JSONL holds one record per line (blank lines skipped). In a JSON file the records are the
elements of a top-level array; of a top-level object holding exactly one array of objects
({"items": [...]}: the object's other keys are left out), that array's elements; otherwise the
whole document is one record. A record is rendered a line per value: nested objects flattened
with dotted keys (`author.name: Li`), lists of scalars joined with ", ", lists holding objects or
lists as compact JSON; nulls, empty strings and empty containers are left out. A record with a
"title", "name" or "question" string (in that order, any case) has it as its heading.

Each section is located by the record's index (from 0, counting every record) and, in a JSON
file, its JSON pointer (RFC 6901: "/items/3"; "" for the whole document). A question/answer
JSONL file is a document like any other here (importing FAQ pairs is a separate command).

JSON must be UTF-8 (RFC 8259; a BOM is accepted). Nesting deeper than RAGSIFT_MAX_XML_DEPTH
(the XML depth limit, reused) is rejected, records count against max_document_blocks and text
against max_document_chars. What json builds in memory is bounded by the file size only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import ParsedDocument, Section, normalize_inline
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/json"
JSONL_MEDIA_TYPE = "application/jsonl"

_UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_TITLE_KEYS = ("title", "name", "question")
_BLOCKS = "records"


def parse_json(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a JSON document into a section per record."""
    text = _decode(data, "JSON")
    try:
        document = json.loads(text)
    except RecursionError as exc:
        raise _too_deep("JSON", limits) from exc
    except ValueError as exc:  # JSONDecodeError, or an integer over Python's digit limit
        hint = "; one value per line is a .jsonl file" if "Extra data" in str(exc) else ""
        raise DocumentRejected(f"file is not valid JSON ({exc}{hint})") from exc
    check_depth(document, limits, "JSON")
    budget = TextBudget(limits)
    sections = tuple(
        section
        for index, (pointer, record) in enumerate(_records(document))
        if (section := _section(record, index, pointer, budget)) is not None
    )
    logger.debug("JSON: %d records with text", len(sections))
    return ParsedDocument(media_type=MEDIA_TYPE, sections=sections)


def parse_jsonl(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a JSON Lines file into a section per record (one per non-blank line)."""
    text = _decode(data, "JSONL")
    budget = TextBudget(limits)
    sections: list[Section] = []
    index = 0
    # Lines end at "\n" only: str.splitlines would also split at U+2028 inside a string.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except RecursionError as exc:
            raise _too_deep(f"JSONL line {number:,}", limits) from exc
        except ValueError as exc:
            raise DocumentRejected(f"JSONL line {number:,} is not valid JSON ({exc})") from exc
        check_depth(record, limits, f"JSONL line {number:,}")
        section = _section(record, index, None, budget)
        if section is not None:
            sections.append(section)
        index += 1
    logger.debug("JSONL: %d records, %d with text", index, len(sections))
    return ParsedDocument(media_type=JSONL_MEDIA_TYPE, sections=tuple(sections))


def json_pointer(*tokens: str | int) -> str:
    """The RFC 6901 pointer of a path: "~" is written "~0" and "/" "~1" in each token."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def check_depth(value: Any, limits: ParseLimits, what: str) -> None:
    """Reject a value whose objects and arrays nest deeper than max_xml_depth."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > limits.max_xml_depth:
            raise _too_deep(what, limits)
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def record_lines(record: Any) -> list[str]:
    """A record as `key: value` lines (a scalar or list record: its value alone)."""
    if isinstance(record, dict):
        return [f"{key}: {value}" for key, value in _flatten(record, "")]
    value = _value_text(record)
    return [value] if value else []


def _decode(data: bytes, kind: str) -> str:
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    if data.startswith(_OTHER_BOMS) or b"\x00" in data:
        raise DocumentRejected(f"{kind} must be UTF-8 (RFC 8259); the file is UTF-16 or UTF-32")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentRejected(
            f"{kind} must be UTF-8 (RFC 8259); byte {exc.start:,} is not UTF-8 text"
        ) from exc


def _too_deep(what: str, limits: ParseLimits) -> DocumentRejected:
    return reject(
        f"{what} nests objects and arrays more than {limits.max_xml_depth:,} deep "
        "(RAGSIFT_MAX_XML_DEPTH)"
    )


def _records(document: Any) -> Iterator[tuple[str, Any]]:
    """(pointer, record) for every record of a JSON document, in order."""
    if isinstance(document, list):
        for index, item in enumerate(document):
            yield json_pointer(index), item
        return
    if isinstance(document, dict):
        arrays = [
            key for key, value in document.items()
            if isinstance(value, list) and value and all(isinstance(item, dict) for item in value)
        ]
        if len(arrays) == 1:
            for index, item in enumerate(document[arrays[0]]):
                yield json_pointer(arrays[0], index), item
            return
    yield "", document


def _section(record: Any, index: int, pointer: str | None, budget: TextBudget) -> Section | None:
    budget.add_block(_BLOCKS)
    text = "\n".join(record_lines(record))
    if not text:
        return None
    heading = _heading(record)
    budget.add_chars(len(text) + len(heading))
    locator = Locator(record=index, pointer=pointer)
    return Section(heading_path=(heading,) if heading else (), text=text, locator=locator)


def _heading(record: Any) -> str:
    if not isinstance(record, dict):
        return ""
    by_key = {str(key).lower(): value for key, value in reversed(record.items())}
    for key in _TITLE_KEYS:
        value = by_key.get(key)
        if isinstance(value, str) and (title := normalize_inline(value)):
            return title
    return ""


def _flatten(record: dict[str, Any], prefix: str) -> Iterator[tuple[str, str]]:
    for key, value in record.items():
        name = f"{prefix}.{normalize_inline(key)}" if prefix else normalize_inline(key)
        if isinstance(value, dict):
            yield from _flatten(value, name)
            continue
        text = _value_text(value)
        if text:
            yield name, text


def _value_text(value: Any) -> str:
    """A value on one line: text as it is, lists of scalars joined, deeper lists as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return normalize_inline(value)
    if isinstance(value, bool | int | float):
        return json.dumps(value)  # true/false, NaN, 1e+20: as JSON writes them
    if isinstance(value, list):
        if all(not isinstance(item, dict | list) for item in value):
            return ", ".join(text for item in value if (text := _value_text(item)))
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, dict):  # a dict inside a list record is rendered by json.dumps
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else ""
    return str(value)
