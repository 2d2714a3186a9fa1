"""Markdown front matter as document metadata: the `---` block at the top of a .md file.

A strict, documented subset of YAML is read (PyYAML is not a dependency of ragsift, and a
subset whose every line is checked refuses what it would misread instead of guessing):

    ---
    dept: hr                 # a value typed as `--meta` types it: number, true/false,
    year: 2024               #   ISO date or datetime, "quoted" or 'quoted' string, else text
    tags: [policy, leave]    # a flow list of strings
    owners:                  # or a block list of strings
      - alice
      - bob
    draft: null              # null or ~: the key is left out
    ---

Anything else (nested mappings, multi-line strings, anchors) is refused with InvalidInput
naming the line. The block is never indexed as text (parsers/markdown.py skips it); explicit
metadata (a sidecar, `--meta`, the upload form's `metadata`) wins over it key by key.
"""

from __future__ import annotations

import re
from typing import Any

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import cli_value, encode_value
from ragsift.ingestion.parsers.decoding import decode_text
from ragsift.ingestion.parsers.markdown import FRONT_MATTER

MARKDOWN_SUFFIXES = (".md", ".markdown")
_ENTRY = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(.*))?$")
_ITEM = re.compile(r"[ \t]+-[ \t]+(.*)$")
_COMMENT = re.compile(r"(?:^|[ \t]+)#.*$")


def is_markdown(filename: str) -> bool:
    return filename.lower().endswith(MARKDOWN_SUFFIXES)


def front_matter(data: bytes) -> dict[str, Any]:
    """The front matter's metadata in its JSON form ({} when the file has none)."""
    # exactly the block the Markdown parser leaves out of the text
    found = FRONT_MATTER.match(decode_text(data))
    if found is None:
        return {}
    result: dict[str, Any] = {}
    listing: str | None = None  # the key whose block list is being read
    for number, raw in enumerate(found.group(0).splitlines()[1:-1], start=2):
        line = _COMMENT.sub("", raw).rstrip()
        if not line.strip():
            continue
        item = _ITEM.match(line)
        if item is not None and listing is not None:
            result.setdefault(listing, []).append(_string(item.group(1), number))
            continue
        entry = _ENTRY.match(line)
        if entry is None:
            raise InvalidInput(f"front matter line {number}: {raw.strip()!r} is not `key: value`"
                               " or a `- item` of a list (docs/how-to/metadata-filters.md)")
        key, text = entry.group(1), (entry.group(2) or "").strip()
        listing = key if not text else None
        if text and text not in ("null", "~"):
            result[key] = _value(text, number)
    return result


def _value(text: str, number: int) -> Any:
    if text.startswith("["):
        if not text.endswith("]"):
            raise InvalidInput(f"front matter line {number}: an unclosed [list]")
        inner = text[1:-1].strip()
        return [_string(part, number) for part in inner.split(",")] if inner else []
    if text[0] in "{|>&*!":
        raise InvalidInput(f"front matter line {number}: {text[:20]!r} is YAML beyond the "
                           "subset ragsift reads (scalars and lists of strings)")
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return encode_value(cli_value(text))


def _string(text: str, number: int) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if not text:
        raise InvalidInput(f"front matter line {number}: an empty list item")
    return text
