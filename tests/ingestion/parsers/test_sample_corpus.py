"""Every file in samples/ (the README demo corpus) parses into substantial text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS, parse_document

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
SAMPLE_FILES = sorted(path for path in SAMPLES.iterdir() if path.suffix in SUPPORTED_EXTENSIONS)

# A fact each document must still contain after parsing (checks layout survives extraction).
EXPECTED = {
    "hr-handbook-zh.md": "满 20 年 | 15 天",
    "product-manual-en.pdf": "E-104",
    "security-policy-zh.pdf": "密码每 90 天必须更换一次",
    "travel-policy-en.docx": "Over 10 hours | Business | Vice president",
    "it-faq-bilingual.html": "连续输错密码 5 次后，账号会被自动锁定 30 分钟",
    "release-notes-en.txt": "v2.4.1 - 2024-06-18",
}


def test_samples_cover_every_format() -> None:
    assert {path.name for path in SAMPLE_FILES} == set(EXPECTED)
    assert {path.suffix for path in SAMPLE_FILES} >= {".md", ".pdf", ".docx", ".html", ".txt"}


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda path: path.name)
def test_sample_parses_into_substantial_text(path: Path) -> None:
    parsed = parse_document(path.name, path.read_bytes())
    text = "\n".join(section.text for section in parsed.sections)
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    words = len(re.findall(r"[A-Za-z]+", text))
    # "A few pages": 1500 Han characters or 800 English words, or a mix of both.
    assert han / 1500 + words / 800 >= 1, f"{path.name}: {han} Han characters, {words} words"
    assert EXPECTED[path.name] in text
    assert path.stat().st_size < 200_000


@pytest.mark.parametrize("name", ["product-manual-en.pdf", "security-policy-zh.pdf"])
def test_sample_pdfs_have_several_pages(name: str) -> None:
    parsed = parse_document(name, (SAMPLES / name).read_bytes())
    assert [section.locator.page for section in parsed.sections] == list(
        range(1, len(parsed.sections) + 1)
    )
    assert len(parsed.sections) >= 3


@pytest.mark.parametrize(
    "name", ["hr-handbook-zh.md", "travel-policy-en.docx", "it-faq-bilingual.html"]
)
def test_structured_samples_have_nested_headings(name: str) -> None:
    parsed = parse_document(name, (SAMPLES / name).read_bytes())
    assert max(len(section.heading_path) for section in parsed.sections) >= 3
