"""Markdown front matter read as metadata: a strict subset of YAML, typed as `--meta` types."""

from __future__ import annotations

import pytest

from ragsift.domain.errors import InvalidInput
from ragsift.ingestion.front_matter import front_matter, is_markdown
from ragsift.ingestion.parsers.markdown import parse_markdown

DOC = b"""---
dept: hr   # a comment
year: 2024
code: "007"
name: 'O''Brien'
issued: 2024-05-01
final: true
tags: [policy, "annual leave"]
owners:
  - alice
  - bob
draft: null
---
# Leave

Fifteen days a year.
"""


def test_scalars_are_typed_as_on_the_command_line_and_lists_are_strings() -> None:
    assert front_matter(DOC) == {
        "dept": "hr", "year": 2024, "code": "007", "name": "O'Brien",
        "issued": {"$date": "2024-05-01"}, "final": True,
        "tags": ["policy", "annual leave"], "owners": ["alice", "bob"]}


def test_the_block_is_not_text_of_the_document() -> None:
    parsed = parse_markdown(DOC)
    text = " ".join(section.text for section in parsed.sections)
    assert "Fifteen days" in text and "dept" not in text and "alice" not in text


@pytest.mark.parametrize(("block", "line"), [
    ("owner:\n  name: alice\n", 3), ("dept: hr\nnotes: |\n", 3), ("tags: [a, b\n", 2),
    ("dept: hr\njust text\n", 3)])
def test_yaml_beyond_the_subset_is_refused_naming_the_line(block: str, line: int) -> None:
    with pytest.raises(InvalidInput, match=f"front matter line {line}"):
        front_matter(f"---\n{block}---\nbody\n".encode())


def test_a_file_without_front_matter_has_none() -> None:
    assert front_matter(b"# Title\n\n---\ndept: hr\n---\n") == {}
    assert is_markdown("Notes.MD") and not is_markdown("notes.txt")
