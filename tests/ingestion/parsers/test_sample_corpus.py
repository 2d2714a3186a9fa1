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
    "network-architecture-en.pdf": "10.60.0.0/20",
    "security-policy-zh.pdf": "密码每 90 天必须更换一次",
    "travel-policy-en.docx": "Over 10 hours | Business | Vice president",
    "it-faq-bilingual.html": "连续输错密码 5 次后，账号会被自动锁定 30 分钟",
    "release-notes-en.txt": "v2.4.1 - 2024-06-18",
    "onboarding-deck.pptx": '| 软件工程师 Software engineer | MacBook Pro 16" 36 GB | 2 x 27" 4K |',
}
# Office and visual samples are small on purpose (a price list, a one-page scan, a picture):
# each must still yield the fact named here, found by OCR for the scan and the picture.
SMALL = {
    "price-limits.xlsx": "| 一线城市 | 北京、上海、广州、深圳 | 经理及以上 | 900 | 120 |",
    "scanned-notice-zh.pdf": "信息安全",
    "wifi-guide.png": "XH-Guest",
}
OCR_SAMPLES = {"scanned-notice-zh.pdf", "wifi-guide.png"}


def _ocr_or_skip(name: str) -> None:
    if name in OCR_SAMPLES:  # importing it loads OpenCV too (libGL), so really import it
        pytest.importorskip("rapidocr_onnxruntime", reason=f"{name} needs the ocr extra")


def test_samples_cover_every_format() -> None:
    assert {path.name for path in SAMPLE_FILES} == set(EXPECTED) | set(SMALL)
    assert {path.suffix for path in SAMPLE_FILES} >= {
        ".md", ".pdf", ".docx", ".html", ".txt", ".xlsx", ".pptx", ".png"}


@pytest.mark.parametrize("path", [p for p in SAMPLE_FILES if p.name in EXPECTED],
                         ids=lambda path: path.name)
def test_sample_parses_into_substantial_text(path: Path) -> None:
    parsed = parse_document(path.name, path.read_bytes())
    text = "\n".join(section.text for section in parsed.sections)
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    words = len(re.findall(r"[A-Za-z]+", text))
    # "A few pages": 1500 Han characters or 800 English words, or a mix of both.
    assert han / 1500 + words / 800 >= 1, f"{path.name}: {han} Han characters, {words} words"
    assert EXPECTED[path.name] in text
    assert path.stat().st_size < 200_000


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_office_and_visual_samples_keep_their_fact(name: str) -> None:
    _ocr_or_skip(name)
    path = SAMPLES / name
    parsed = parse_document(name, path.read_bytes())
    text = "\n".join(section.text for section in parsed.sections)
    assert SMALL[name] in text
    assert path.stat().st_size < 200_000


@pytest.mark.parametrize("name", ["product-manual-en.pdf", "security-policy-zh.pdf"])
def test_sample_pdfs_have_several_pages(name: str) -> None:
    parsed = parse_document(name, (SAMPLES / name).read_bytes())
    pages = [section.locator.page or 0 for section in parsed.sections]
    # Sections follow the pages (a page holds one per heading on it); every page has text.
    assert pages == sorted(pages)
    assert set(pages) == set(range(1, max(pages) + 1)) and max(pages) >= 3


def test_the_diagram_sample_keeps_its_figure_with_caption_and_box() -> None:
    name = "network-architecture-en.pdf"
    parsed = parse_document(name, (SAMPLES / name).read_bytes())
    [figure] = parsed.assets
    assert figure.caption.startswith("Figure 1: Office LAN, firewall and VPN gateway")
    assert figure.locator.page == 1 and len(figure.locator.boxes) == 1
    assert {section.locator.page for section in parsed.sections} == {1, 2}
    assert ("Northwind Network Architecture", "4. VPN gateway") in {
        section.heading_path for section in parsed.sections
    }


@pytest.mark.parametrize(
    "name",
    [
        "hr-handbook-zh.md", "travel-policy-en.docx", "it-faq-bilingual.html",
        "product-manual-en.pdf", "security-policy-zh.pdf",
    ],
)
def test_structured_samples_have_nested_headings(name: str) -> None:
    parsed = parse_document(name, (SAMPLES / name).read_bytes())
    assert max(len(section.heading_path) for section in parsed.sections) >= 3
