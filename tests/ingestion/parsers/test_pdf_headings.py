"""PDF headings: from font sizes (no outline) or from the outline, one section per page."""

from __future__ import annotations

import io

from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfgen import canvas
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParseLimits, parse_document

NO_OCR = ParseLimits(ocr="off")  # short test pages would otherwise be OCRed as scans
BODY = (
    "The office network reaches the data centre through the firewall and a site-to-site VPN. "
    "Every branch has its own gateway, and traffic between branches is routed over the tunnel "
    "so that no internal service is ever exposed to the internet."
)
SIZES = {"title": 22.0, "h1": 16.0, "h2": 13.0, "p": 10.5, "big": 15.0}


def platypus_pdf(pages: list[list[tuple[str, str]]]) -> bytes:
    """One page per entry; each (style, text) with style title, h1, h2, p or big."""
    styles = {
        name: ParagraphStyle(
            name, fontName="Helvetica-Bold" if name != "p" else "Helvetica", fontSize=size,
            leading=size * 1.3, spaceBefore=6,
        )
        for name, size in SIZES.items()
    }
    story: list[object] = []
    for index, page in enumerate(pages):
        if index:
            story.append(PageBreak())
        story.extend(Paragraph(text, styles[kind]) for kind, text in page)
    out = io.BytesIO()
    SimpleDocTemplate(out, pagesize=A4, invariant=1).build(story)
    return out.getvalue()


def sections(data: bytes) -> list[tuple[tuple[str, ...], int | None, str]]:
    parsed = parse_document("doc.pdf", data, NO_OCR)
    return [(s.heading_path, s.locator.page, s.text) for s in parsed.sections]


def test_larger_fonts_become_headings_with_levels_by_size() -> None:
    data = platypus_pdf([[
        ("title", "Network Handbook"), ("h1", "1. Topology"), ("p", BODY),
        ("h2", "1.1 Branch offices"), ("p", BODY), ("h1", "2. Remote access"), ("p", BODY),
    ]])
    assert sections(data) == [
        (("Network Handbook", "1. Topology"), 1, BODY),
        (("Network Handbook", "1. Topology", "1.1 Branch offices"), 1, BODY),
        (("Network Handbook", "2. Remote access"), 1, BODY),
    ]


def test_a_new_page_starts_a_new_section_under_the_same_headings() -> None:
    data = platypus_pdf([
        [("h1", "Firewall rules"), ("p", BODY)],
        [("p", BODY), ("h2", "Exceptions"), ("p", BODY)],
    ])
    parsed = parse_document("doc.pdf", data, NO_OCR)
    assert [(s.heading_path, s.locator) for s in parsed.sections] == [
        (("Firewall rules",), Locator(page=1)),
        (("Firewall rules",), Locator(page=2)),
        (("Firewall rules", "Exceptions"), Locator(page=2)),
    ]
    assert all(block.locator.page == s.locator.page for s in parsed.sections for block in s.blocks)


def test_large_print_that_reads_like_a_sentence_or_a_number_is_not_a_heading() -> None:
    sentence = "Keep the firewall firmware up to date."
    data = platypus_pdf([[
        ("h1", "Checklist"), ("big", sentence), ("big", "42"), ("p", BODY), ("p", BODY),
    ]])
    [(path, _, text)] = sections(data)
    assert path == ("Checklist",)
    assert text.startswith(f"{sentence}\n\n42\n\n")


def test_a_heading_wrapped_over_two_lines_is_one_heading() -> None:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 760, "Connecting branch offices")
    pdf.drawString(72, 738, "over the VPN")
    pdf.setFont("Helvetica", 10)
    for index, line in enumerate(["Line one of the body text.", "Line two of it.", "Three."]):
        pdf.drawString(72, 700 - 13 * index, line)
    pdf.showPage()
    pdf.save()
    [(path, _, _)] = sections(out.getvalue())
    assert path == ("Connecting branch offices over the VPN",)


def outlined_pdf() -> bytes:
    """Headings in body size (no font-size signal), located by the outline."""
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pages = [
        [("Overview", 0), ("Scope", 1)],
        [("Appendix", 0)],  # the outline names this page, but no line on it reads so
    ]
    for number, entries in enumerate(pages, start=1):
        pdf.setFont("Helvetica", 10)
        y = 760.0
        for title, level in entries:
            key = f"p{number}-{title}"
            pdf.bookmarkPage(key)
            pdf.addOutlineEntry(title, key, level=level)
            if title != "Appendix":
                pdf.drawString(72, y, title)
            pdf.drawString(72, y - 16, f"Text under {title.lower()} on page {number}.")
            y -= 60
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def test_an_outline_gives_the_headings_and_their_levels() -> None:
    assert [(path, page) for path, page, _ in sections(outlined_pdf())] == [
        (("Overview",), 1),
        (("Overview", "Scope"), 1),
        (("Appendix",), 2),  # unmatched on its page: heads the page from the top
    ]


def test_the_body_size_is_the_most_common_size_by_characters() -> None:
    # Most text is 10.5 pt; a single 13 pt line is a heading, the 10.5 pt lines are not.
    data = platypus_pdf([[("h2", "Only heading"), ("p", BODY), ("p", BODY), ("p", BODY)]])
    [(path, _, text)] = sections(data)
    assert path == ("Only heading",)
    assert text == "\n\n".join([BODY] * 3)
