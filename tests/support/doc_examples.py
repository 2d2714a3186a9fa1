"""The shell and Python examples of the documentation, found so a test can run them.

A fenced block tagged `bash`, `sh`, `shell` or `python` is an example. The line just before its
fence may say how it runs (an HTML comment, invisible on the site):

    <!-- example: server -->          run with a `ragsift serve` of the sample KB at $RAGSIFT_URL
    <!-- example: skip REASON -->     not run; REASON says which outside service it needs

Without a marker a block runs against the data directory of the sample KB (RAGSIFT_DATA_DIR).
Other languages (`text`, `json`, none) are output or data, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
_MARKER = re.compile(r"^<!--\s*example:\s*(server|skip|cli)\b\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")


@dataclass(frozen=True)
class Example:
    """One example block: where it is, its language, how it runs and its code."""

    page: str  # path relative to the repository root
    line: int  # line of the opening fence, 1-based
    language: str  # "bash" or "python"
    context: str  # "cli", "server" or "skip"
    reason: str  # why a skipped block is skipped
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def examples_of(page: Path, root: Path) -> list[Example]:
    """Every example block of one Markdown page, in page order; a bad marker is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            if lines[index].startswith("<!-- example") and not _MARKER.match(lines[index].strip()):
                raise ValueError(f"{page}:{index + 1}: unreadable example marker {lines[index]!r}")
            index += 1
            continue
        fence, tag = match.group(1), match.group(2).lower()
        end = index + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        marker = _MARKER.match(lines[index - 1].strip()) if index else None
        context, reason = (marker.group(1), marker.group(2)) if marker else ("cli", "")
        if context == "skip" and not reason:
            raise ValueError(f"{page}:{index + 1}: a skipped example must say why")
        if tag in LANGUAGES:
            found.append(Example(
                page=page.relative_to(root).as_posix(), line=index + 1,
                language=LANGUAGES[tag], context=context, reason=reason,
                code="\n".join(lines[index + 1:end]) + "\n",
            ))
        index = end + 1
    return found


def documentation_pages(root: Path) -> list[Path]:
    """README.md and every page of the site, in a stable order."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
