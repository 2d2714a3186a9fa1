"""Generate the binary sample documents in samples/ (PDF, DOCX and PPTX).

The text formats (.md, .html, .txt) in samples/ are written by hand; this script builds the two
PDFs with reportlab and the DOCX with python-docx. Output is deterministic, so re-running it
leaves the committed files unchanged unless the content below changes.

    python scripts/make_samples.py [--out samples]

The Chinese PDF uses reportlab's built-in CID font STSong-Light (no font file needed), whose text
pypdf extracts back as the original Unicode.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import zipfile
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from docx import Document
from docx.shared import Pt
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import (
    ListFlowable,
    ListItem,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

CJK_FONT = "STSong-Light"
Block = tuple[str, Any]


def _styles(font: str | None) -> dict[str, ParagraphStyle]:
    base = getSampleStyleSheet()
    cjk = font is not None
    body = ParagraphStyle(
        "body",
        parent=base["BodyText"],
        fontName=font or "Helvetica",
        fontSize=10.5,
        leading=17 if cjk else 14,
        spaceBefore=6,
        spaceAfter=4,
        wordWrap="CJK" if cjk else None,
    )
    return {
        "title": ParagraphStyle(
            "title", parent=base["Title"], fontName=font or "Helvetica-Bold", fontSize=22,
            leading=28, spaceAfter=12,
        ),
        "subtitle": ParagraphStyle(
            "subtitle", parent=body, fontSize=11, textColor=colors.HexColor("#555555"),
            spaceAfter=14,
        ),
        "h1": ParagraphStyle(
            "h1", parent=base["Heading1"], fontName=font or "Helvetica-Bold", fontSize=16,
            leading=22, spaceBefore=16, spaceAfter=8,
        ),
        "h2": ParagraphStyle(
            "h2", parent=base["Heading2"], fontName=font or "Helvetica-Bold", fontSize=12.5,
            leading=18, spaceBefore=10, spaceAfter=6,
        ),
        "body": body,
        "cell": ParagraphStyle("cell", parent=body, fontSize=9.5, leading=13, spaceBefore=0,
                               spaceAfter=0),
    }


def _table(rows: list[list[str]], styles: dict[str, ParagraphStyle], font: str | None) -> Table:
    cells = [[Paragraph(escape(cell), styles["cell"]) for cell in row] for row in rows]
    # Column widths follow the longest cell of each column (a CJK character counts double),
    # so short columns such as "级别" are not wrapped one character per line.
    weights = [
        max(12, max(sum(2 if ord(ch) > 0x2E80 else 1 for ch in row[col]) for row in rows))
        for col in range(len(rows[0]))
    ]
    available = A4[0] - 44 * mm
    widths = [available * min(weight, 60) / sum(min(w, 60) for w in weights) for weight in weights]
    table = Table(cells, colWidths=widths, hAlign="LEFT", repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor("#999999")),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8eef4")),
                ("FONTNAME", (0, 0), (-1, -1), font or "Helvetica"),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("TOPPADDING", (0, 0), (-1, -1), 3),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
            ]
        )
    )
    return table


def build_pdf(path: Path, doc: dict[str, Any], font: str | None) -> None:
    styles = _styles(font)
    story: list[Any] = [
        Paragraph(escape(doc["title"]), styles["title"]),
        Paragraph(escape(doc["subtitle"]), styles["subtitle"]),
    ]
    for kind, value in doc["blocks"]:
        if kind in ("h1", "h2"):
            story.append(Paragraph(escape(value), styles[kind]))
        elif kind == "p":
            story.append(Paragraph(escape(value), styles["body"]))
        elif kind in ("ul", "ol"):
            items = [ListItem(Paragraph(escape(item), styles["body"])) for item in value]
            # The bullet comes from the CID font: reportlab's default ZapfDingbats/Helvetica
            # bullet extracts as a control character.
            bullets: dict[str, Any] = (
                {"bulletType": "bullet", "start": "•", "bulletFontName": CJK_FONT}
                if kind == "ul"
                else {"bulletType": "1"}
            )
            story.append(ListFlowable(items, leftIndent=14, bulletFontSize=9, **bullets))
        elif kind == "table":
            story.extend([Spacer(1, 4), _table(value, styles, font), Spacer(1, 6)])
        else:
            raise ValueError(f"unknown block kind {kind!r}")
    footer = doc["footer"]

    def on_page(canvas: Any, document: Any) -> None:
        canvas.saveState()
        canvas.setFont(font or "Helvetica", 8)
        canvas.setFillColor(colors.HexColor("#777777"))
        canvas.drawString(20 * mm, 12 * mm, footer.format(page=document.page))
        canvas.restoreState()

    template = SimpleDocTemplate(
        str(path), pagesize=A4, leftMargin=22 * mm, rightMargin=22 * mm, topMargin=20 * mm,
        bottomMargin=22 * mm, title=doc["title"], author=doc["author"], invariant=1,
    )
    template.build(story, onFirstPage=on_page, onLaterPages=on_page)


def build_docx(path: Path, doc: dict[str, Any]) -> None:
    document = Document()
    document.styles["Normal"].font.name = "Calibri"
    document.styles["Normal"].font.size = Pt(11)
    document.add_paragraph(doc["title"], style="Title")
    document.add_paragraph(doc["subtitle"])
    for kind, value in doc["blocks"]:
        if kind == "h1":
            document.add_heading(value, level=1)
        elif kind == "h2":
            document.add_heading(value, level=2)
        elif kind == "p":
            document.add_paragraph(value)
        elif kind in ("ul", "ol"):
            style = "List Bullet" if kind == "ul" else "List Number"
            for item in value:
                document.add_paragraph(item, style=style)
        elif kind == "table":
            table = document.add_table(rows=len(value), cols=len(value[0]))
            table.style = "Table Grid"
            for row_cells, row in zip(table.rows, value, strict=True):
                for cell, text in zip(row_cells.cells, row, strict=True):
                    cell.text = text
            for cell in table.rows[0].cells:
                for run in cell.paragraphs[0].runs:
                    run.bold = True
        else:
            raise ValueError(f"unknown block kind {kind!r}")
    fixed = dt.datetime(2024, 3, 1, 9, 0, 0)
    properties = document.core_properties
    properties.author = doc["author"]
    properties.title = doc["title"]
    properties.created = fixed
    properties.modified = fixed
    properties.last_modified_by = doc["author"]
    properties.revision = 1
    document.save(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = Path(__file__).resolve().parent.parent / "samples"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    pdfmetrics.registerFont(UnicodeCIDFont(CJK_FONT))
    targets = {
        "product-manual-en.pdf": lambda p: build_pdf(p, PRODUCT_MANUAL, None),
        "security-policy-zh.pdf": lambda p: build_pdf(p, SECURITY_POLICY, CJK_FONT),
        "travel-policy-en.docx": lambda p: build_docx(p, TRAVEL_POLICY),
    }
    for name, build in targets.items():
        path = out / name
        build(path)
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    for make in (make_pptx, make_scanned_pdf, make_text_image, make_xlsx, make_diagram_pdf):
        path = make(out)
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


def make_pptx(out: Path) -> Path:
    """Write onboarding-deck.pptx into `out`: a bilingual deck with bullets, a table, speaker
    notes and a flow diagram drawn with Pillow (so the parser has a picture to keep)."""
    from pptx import Presentation
    from pptx.util import Inches, Pt

    presentation = Presentation()
    for slide_spec in ONBOARDING_DECK:
        layout = presentation.slide_layouts[slide_spec.get("layout", 1)]
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = slide_spec["title"]
        if "subtitle" in slide_spec:
            slide.placeholders[1].text = slide_spec["subtitle"]
        if "bullets" in slide_spec:
            frame = slide.placeholders[1].text_frame
            for index, (level, text) in enumerate(slide_spec["bullets"]):
                paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
                paragraph.text = text
                paragraph.level = level
                paragraph.font.size = Pt(20 if level == 0 else 16)
        if "table" in slide_spec:
            rows = slide_spec["table"]
            shape = slide.shapes.add_table(
                len(rows), len(rows[0]), Inches(0.4), Inches(1.6), Inches(9.2), Inches(4.2)
            )
            for r, row in enumerate(rows):
                for c, text in enumerate(row):
                    cell = shape.table.cell(r, c)
                    cell.text = text
                    cell.text_frame.paragraphs[0].font.size = Pt(12)
        if "diagram" in slide_spec:
            _add_flow_diagram(slide, slide_spec["diagram"], slide_spec["caption"])
        if "columns" in slide_spec:
            for index, text in enumerate(slide_spec["columns"]):
                box = slide.shapes.add_textbox(
                    Inches(0.5 + 4.6 * index), Inches(1.7), Inches(4.4), Inches(4.5)
                )
                box.text_frame.word_wrap = True
                box.text_frame.text = text
        slide.notes_slide.notes_text_frame.text = slide_spec["notes"]
    fixed = dt.datetime(2024, 3, 1, 9, 0, 0)
    properties = presentation.core_properties
    properties.author = "Xinghe Technology People Team"
    properties.title = ONBOARDING_DECK[0]["title"]
    properties.created = fixed
    properties.modified = fixed
    properties.last_modified_by = "Xinghe Technology People Team"
    properties.revision = 1
    buffer = io.BytesIO()
    presentation.save(buffer)
    path = out / "onboarding-deck.pptx"
    path.write_bytes(_fixed_zip_dates(buffer.getvalue()))
    return path


def _add_flow_diagram(slide: Any, steps: list[str], caption: str) -> None:
    """A PNG of boxes joined by arrows, one box per step, placed on the slide with alt text."""
    from PIL import Image, ImageDraw, ImageFont
    from pptx.util import Inches

    width, height, box_w, box_h = 1200, 360, 260, 150
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=34)
    small = ImageFont.load_default(size=24)
    gap = (width - len(steps) * box_w) // (len(steps) + 1)
    top = (height - box_h) // 2 + 20
    draw.text((width // 2, 40), " -> ".join(steps), fill="#333333", font=small, anchor="mm")
    for index, step in enumerate(steps):
        left = gap + index * (box_w + gap)
        draw.rounded_rectangle(
            (left, top, left + box_w, top + box_h), radius=24, fill="#dbe9f7", outline="#1f5f9f",
            width=5,
        )
        draw.text((left + box_w // 2, top + box_h // 2), step, fill="#0b2e4f", font=font,
                  anchor="mm")
        if index + 1 < len(steps):
            start, end, mid = left + box_w + 12, left + box_w + gap - 12, top + box_h // 2
            draw.line((start, mid, end - 20, mid), fill="#1f5f9f", width=8)
            draw.polygon([(end, mid), (end - 28, mid - 18), (end - 28, mid + 18)], fill="#1f5f9f")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    buffer.seek(0)
    picture = slide.shapes.add_picture(buffer, Inches(0.5), Inches(1.8), width=Inches(9))
    picture._element._nvXxPr.cNvPr.set("descr", caption)


def _fixed_zip_dates(data: bytes) -> bytes:
    """The same package with every member dated 2024-03-01, so re-running changes nothing."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(
        out, "w", zipfile.ZIP_DEFLATED
    ) as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 3, 1, 9, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(info))
    return out.getvalue()


def make_scanned_pdf(out: Path) -> Path:
    """Write scanned-notice-zh.pdf into `out`: page 1 of security-policy-zh.pdf (written first)
    rendered at 150 dpi by pypdfium2, made bilevel like a fax scan and wrapped by Pillow as an
    image-only PDF (CCITT G4, no text layer), so the PDF parser has a page to OCR."""
    from ragsift.ingestion.parsers.pdf_pages import render_page

    page = render_page((out / "security-policy-zh.pdf").read_bytes(), 1, dpi=SCAN_DPI)
    # A threshold, not Pillow's default dithering: a scanner's bilevel mode keeps strokes solid.
    scan = page.convert("L").point(lambda value: 255 if value > 160 else 0, mode="1")
    path = out / "scanned-notice-zh.pdf"
    fixed = dt.datetime(2024, 3, 1, 9, 0, 0).timetuple()  # Pillow dates it "now" otherwise
    scan.save(path, "PDF", resolution=SCAN_DPI, title="星河科技信息安全管理政策（扫描件）",
              creationDate=fixed, modDate=fixed)
    return path


def make_text_image(out: Path) -> Path:
    """Write wifi-guide.png into `out`: a notice with English text (Pillow's built-in font) and
    Chinese lines when the machine has a CJK font (fonts-wqy-microhei; skipped otherwise, so
    the file depends on the fonts installed)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1400, 620), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 1380, 600), outline="#1f5f9f", width=6)
    latin = ImageFont.load_default(size=40)
    draw.text((70, 60), "Guest Wi-Fi guide", fill="#0b2e4f", font=ImageFont.load_default(size=60))
    top = 170
    for line in WIFI_GUIDE_EN:
        draw.text((70, top), line, fill="black", font=latin)
        top += 62
    cjk = next((path for path in CJK_FONT_FILES if Path(path).is_file()), None)
    if cjk is not None:
        top += 30
        for line in WIFI_GUIDE_ZH:
            draw.text((70, top), line, fill="black", font=ImageFont.truetype(cjk, 40))
            top += 62
    path = out / "wifi-guide.png"
    image.save(path, format="PNG", optimize=True)
    return path


# --- content ---------------------------------------------------------------------------------

SCAN_DPI = 150
CJK_FONT_FILES = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
)
WIFI_GUIDE_EN = [
    "Guest Wi-Fi: XH-Guest, password changes every Monday",
    "Ask the front desk for this week's password.",
    "Staff devices use XH-Corp with your company account.",
]
WIFI_GUIDE_ZH = [
    "访客无线网络：XH-Guest，密码每周一更换。",
    "员工设备请连接 XH-Corp，使用公司账号登录。",
]

PRODUCT_MANUAL: dict[str, Any] = {
    "title": "Aurora X200 Smart Thermostat",
    "subtitle": "User and Installation Manual - model AX200-W, document revision 3 (May 2024)",
    "author": "Aurora Devices Inc.",
    "footer": "Aurora X200 Smart Thermostat - User and Installation Manual - page {page}",
    "blocks": [
        ("h1", "1. Safety information"),
        ("p", "Read this manual completely before installing the Aurora X200. Installation "
              "requires basic electrical skills; if you are not comfortable working with "
              "low-voltage wiring, have the thermostat installed by a qualified HVAC "
              "technician. Incorrect wiring can damage the thermostat or your heating and "
              "cooling equipment and is not covered by the warranty."),
        ("ul", [
            "Turn off power to the heating and cooling system at the breaker or the system "
            "switch before removing the old thermostat. Confirm the system is off by changing "
            "the temperature on the old thermostat and waiting five minutes.",
            "The X200 is designed for 24 VAC low-voltage systems only. Never connect it to "
            "line voltage (120 V or 240 V) electric baseboard heaters; this can cause fire.",
            "The thermostat contains no user-serviceable parts. Do not open the housing.",
            "If your old thermostat contains a sealed glass tube of mercury, do not throw it "
            "away with household waste. Take it to a local recycling centre.",
        ]),
        ("h1", "2. What is in the box"),
        ("ul", [
            "Aurora X200 thermostat display unit",
            "Base plate with push-in wire terminals and built-in bubble level",
            "Trim plate (covers marks left by the old thermostat)",
            "Two wall screws and two wall anchors",
            "Wire labels (20) and a quick start guide",
            "Common-wire adapter (C-wire adapter) for systems without a C wire",
        ]),
        ("h1", "3. Installation"),
        ("h2", "3.1 Compatibility"),
        ("p", "The X200 works with most 24 VAC systems: gas, oil and electric furnaces, air "
              "conditioners, heat pumps with auxiliary or emergency heat (up to 2 heating and "
              "1 cooling stage), boilers and radiant floor systems with a 24 VAC control, and "
              "whole-home humidifiers or ventilators wired to the G terminal. It is not "
              "compatible with line-voltage systems, millivolt gas fireplaces or proprietary "
              "communicating systems."),
        ("p", "The thermostat needs continuous power from a common wire (C wire). If your "
              "system has no C wire, install the C-wire adapter included in the box at the "
              "furnace control board before you continue. Without a C wire the thermostat shows "
              "error E-101 and will not connect to Wi-Fi."),
        ("h2", "3.2 Removing the old thermostat"),
        ("ol", [
            "Turn off power to the system at the breaker.",
            "Remove the old thermostat cover and take a photo of the existing wiring. The photo "
            "is the easiest way to check your work later.",
            "Label each wire with the sticker that matches the letter of the terminal it is "
            "connected to (for example R, C, W1, Y1, G).",
            "Disconnect the wires and unscrew the old base plate. Keep the wires from falling "
            "back into the wall by wrapping them around a pencil.",
        ]),
        ("h2", "3.3 Wiring the X200"),
        ("p", "Mount the base plate with the supplied screws, using the bubble level to keep it "
              "straight. Insert each labelled wire into the terminal with the same letter until "
              "the button pops up. Strip 6 mm of insulation if the copper end is damaged. The "
              "terminals are:"),
        ("table", [
            ["Terminal", "Function", "Typical wire colour"],
            ["R / Rh / Rc", "24 VAC power (heating / cooling transformer)", "Red"],
            ["C", "24 VAC common, required", "Blue or black"],
            ["W1 / W2", "Heating stage 1 / stage 2 or auxiliary heat", "White"],
            ["Y1", "Cooling or heat pump compressor stage 1", "Yellow"],
            ["G", "Fan or ventilator", "Green"],
            ["O/B", "Heat pump reversing valve", "Orange or dark blue"],
        ]),
        ("p", "If your old thermostat had separate Rh and Rc wires, connect both; the jumper "
              "between them is removed automatically. Snap the display unit onto the base "
              "plate and restore power. The Aurora logo appears within 10 seconds and the "
              "set-up assistant starts."),
        ("h2", "3.4 Set-up assistant"),
        ("p", "Use the dial to choose the language, the temperature unit and your system type. "
              "The assistant tests each wired stage by running it for 60 seconds. If a stage "
              "does not respond, the thermostat shows error E-201; check the wiring of that "
              "terminal before retrying."),
        ("h1", "4. Wi-Fi setup"),
        ("p", "The X200 connects to 2.4 GHz Wi-Fi networks (802.11 b/g/n) that use WPA2 or WPA3 "
              "Personal security. 5 GHz-only networks, captive portals (hotel or campus "
              "sign-in pages) and WPA2 Enterprise networks are not supported. On dual-band "
              "routers that use one network name for both bands, the thermostat selects the "
              "2.4 GHz band automatically."),
        ("ol", [
            "Install the Aurora Home app from the App Store or Google Play and create an account.",
            "In the app, tap Add device > Thermostat > Aurora X200.",
            "On the thermostat, open Menu > Settings > Wi-Fi. A six-digit pairing code is shown "
            "on the display; enter it in the app when asked.",
            "Choose your home network and enter its password. The password is sent to the "
            "thermostat over Bluetooth LE and is never stored on Aurora servers.",
            "Wait until the Wi-Fi symbol on the display stops blinking (usually under one "
            "minute). The app then shows the current temperature.",
        ]),
        ("p", "If pairing fails, move the phone closer to the thermostat, make sure Bluetooth "
              "is enabled and try again. If the thermostat shows E-103, it cannot find the "
              "network: check that the router broadcasts a 2.4 GHz network. If it shows E-104, "
              "the Wi-Fi password was rejected: re-enter the password, paying attention to "
              "upper and lower case. Repeated E-104 errors on WPA3 networks are fixed by "
              "firmware 2.4.1 or later; until then, set the router to WPA2/WPA3 mixed mode."),
        ("h1", "5. Everyday use"),
        ("h2", "5.1 Schedules"),
        ("p", "The X200 starts with a comfort schedule of 21 degrees C from 06:30 to 22:30 and "
              "17 degrees C at night. Change the schedule in the app under Schedule, or on the "
              "thermostat under Menu > Schedule. Up to 6 periods per day can be set, each with "
              "its own heating and cooling temperature."),
        ("h2", "5.2 Eco mode and geofencing"),
        ("p", "Eco mode holds an energy-saving temperature (default 16 degrees C for heating "
              "and 28 degrees C for cooling) while nobody is home. With geofencing enabled in "
              "the app, the thermostat switches to Eco mode when the last household member "
              "leaves and back to the schedule when the first one returns. Typical savings are "
              "10 to 15 percent of the heating and cooling bill."),
        ("h2", "5.3 Keypad lock"),
        ("p", "To stop others from changing the settings, enable the keypad lock under Menu > "
              "Settings > Lock and choose a 6-digit PIN. If you forget the PIN, you can reset it "
              "from the Aurora Home app, which requires your account password."),
        ("h1", "6. Error codes"),
        ("p", "When the thermostat detects a problem, the display shows an error code and the "
              "app sends a notification. Most errors clear by themselves once the cause is "
              "fixed; hold the menu button for 10 seconds to restart the thermostat."),
        ("table", [
            ["Code", "Meaning", "What to do"],
            ["E-101", "No power on the C wire", "Check the C wire at the thermostat and the "
             "furnace; install the C-wire adapter."],
            ["E-102", "Internal temperature sensor fault", "Restart the thermostat. If the "
             "error returns, contact support for a replacement."],
            ["E-103", "Wi-Fi network not found", "Make sure a 2.4 GHz network is available and "
             "within range."],
            ["E-104", "Wi-Fi authentication failed", "Re-enter the Wi-Fi password in Menu > "
             "Settings > Wi-Fi; update to firmware 2.4.1."],
            ["E-105", "Aurora cloud service unreachable", "Check the router's internet "
             "connection. Schedules keep running offline."],
            ["E-201", "Heating or cooling system not responding", "Check the system switch and "
             "breaker, then the wiring of the reported stage."],
            ["E-203", "Humidity sensor fault", "Restart the thermostat; humidity control is "
             "disabled until the sensor recovers."],
            ["E-301", "Firmware update failed", "No action needed; the thermostat retries the "
             "next night on the previous version."],
        ]),
        ("h1", "7. Maintenance and firmware updates"),
        ("p", "Clean the display with a dry microfibre cloth; do not use sprays or solvents. "
              "Replace the air filter of your system when the app reminds you (by default "
              "every 300 run-time hours). Firmware updates are installed automatically between "
              "02:00 and 04:00 and never change your schedules or settings. To check the "
              "installed version, hold the menu button for 5 seconds."),
        ("h1", "8. Specifications"),
        ("table", [
            ["Item", "Value"],
            ["Model", "AX200-W"],
            ["Dimensions", "96 x 96 x 24 mm (trim plate 120 x 120 mm)"],
            ["Weight", "182 g"],
            ["Display", "3.5-inch colour LCD, 480 x 480 pixels, ambient light sensor"],
            ["Power supply", "24 VAC +/-20 %, 50/60 Hz, via R and C terminals"],
            ["Power consumption", "1.5 W typical, 3 W maximum"],
            ["Wireless", "Wi-Fi 802.11 b/g/n 2.4 GHz, WPA2/WPA3 Personal; Bluetooth LE 5.0"],
            ["Set-point range", "5 to 35 degrees C (41 to 95 degrees F)"],
            ["Temperature accuracy", "+/-0.3 degrees C"],
            ["Humidity accuracy", "+/-3 % RH (20 to 80 % RH)"],
            ["Operating conditions", "0 to 45 degrees C, 10 to 90 % RH, non-condensing"],
            ["Certifications", "FCC Part 15, CE, UL 60730-1"],
        ]),
        ("h1", "9. Warranty and support"),
        ("p", "Aurora Devices Inc. warrants the X200 against defects in materials and "
              "workmanship for 2 years from the date of purchase (3 years when installed by an "
              "Aurora Pro installer). The warranty does not cover damage caused by incorrect "
              "wiring, line-voltage connection, water or opening the housing. To make a claim, "
              "contact support with your proof of purchase and the serial number printed on "
              "the back of the display unit."),
        ("p", "Support: support@aurora-devices.example, +1 800 555 0142, Monday to Friday, "
              "08:00-20:00 ET. Online help and the latest version of this manual: "
              "help.aurora-devices.example/x200."),
    ],
}

SECURITY_POLICY: dict[str, Any] = {
    "title": "星河科技信息安全管理政策",
    "subtitle": "文件编号 XH-ISMS-001，版本 3.2，2024 年 1 月 1 日起生效，由信息安全委员会批准",
    "author": "星河科技有限公司信息安全委员会",
    "footer": "星河科技信息安全管理政策 V3.2 · 内部公开 · 第 {page} 页",
    "blocks": [
        ("h1", "一、目的"),
        ("p", "为规范星河科技有限公司（以下简称“公司”）的信息安全管理，保护公司、客户及合作伙伴的"
              "信息资产免受泄露、篡改和破坏，保障业务持续稳定运行，依据《中华人民共和国网络安全法》"
              "《中华人民共和国数据安全法》《中华人民共和国个人信息保护法》及 ISO/IEC 27001 标准，"
              "制定本政策。"),
        ("h1", "二、适用范围"),
        ("p", "本政策适用于公司全体员工、实习生、外包人员，以及因业务需要访问公司信息系统的第三方"
              "人员；适用于公司拥有或管理的全部信息资产，包括但不限于业务数据、源代码、办公终端、"
              "服务器、网络设备、云服务账号以及纸质文件。"),
        ("h1", "三、组织与职责"),
        ("ul", [
            "信息安全委员会：由总经理担任主任，负责审批信息安全方针和重大安全事项，每季度召开一次会议。",
            "首席信息安全官（CISO）：负责信息安全体系的建设与运行，组织风险评估、安全审计和事件处置。",
            "IT 部门：负责安全技术措施的落地，包括账号管理、终端防护、网络边界防护和数据备份。",
            "各部门负责人：对本部门的信息安全负直接管理责任，指定一名兼职信息安全联络员。",
            "全体员工：遵守本政策，妥善保管账号和设备，发现安全隐患或安全事件时及时报告。",
        ]),
        ("h1", "四、信息分类与分级"),
        ("p", "公司信息按照敏感程度分为四个级别。信息的创建者或所有者负责确定级别并进行标识，"
              "未标识的信息默认按“内部”级别处理。"),
        ("table", [
            ["级别", "定义", "示例", "基本要求"],
            ["公开", "可以对外公开发布的信息", "官网新闻、产品宣传册", "发布前经市场部审核"],
            ["内部", "仅限公司内部使用的信息", "内部通知、规章制度", "不得对外转发"],
            ["机密", "泄露会对公司造成损害的信息", "客户名单、合同、财务数据、源代码",
             "按需授权访问，传输和存储须加密"],
            ["绝密", "泄露会对公司造成严重损害的信息", "并购方案、核心算法、未公开财报",
             "经 CISO 审批，专人保管，访问全程留痕"],
        ]),
        ("p", "机密及以上级别的信息不得存放在个人网盘、个人邮箱或即时通讯工具中；对外提供时须签署"
              "保密协议，并通过公司指定的加密文件传输平台发送。"),
        ("h1", "五、账号与密码管理"),
        ("h2", "5.1 账号管理"),
        ("p", "公司实行“一人一号”，禁止共享或转借账号。员工入职时由人力资源部发起开通申请，IT 部门"
              "在 1 个工作日内开通；员工调岗时，原有权限须在 3 个工作日内调整；员工离职时，账号须在"
              "最后工作日当天停用。系统管理员账号须与日常办公账号分开，且仅在执行管理操作时使用。"),
        ("h2", "5.2 密码要求"),
        ("ul", [
            "密码长度至少 12 位，须包含大写字母、小写字母、数字和特殊字符中的至少三类；",
            "不得使用姓名拼音、工号、生日、手机号等容易被猜到的信息作为密码；",
            "密码每 90 天必须更换一次，新密码不得与最近 5 次使用过的密码相同；",
            "连续输错密码 5 次，账号自动锁定 30 分钟；",
            "不得在浏览器中保存公司系统的密码，推荐使用公司提供的密码管理器。",
        ]),
        ("h2", "5.3 多因素认证"),
        ("p", "远程访问（VPN）、在公司网络以外访问邮箱、访问人力资源系统和财务系统，以及所有管理员"
              "账号，必须启用多因素认证（MFA）。多因素认证优先使用认证器应用，不得使用短信作为唯一的"
              "第二因素。"),
        ("h1", "六、终端与移动设备安全"),
        ("ul", [
            "公司配发的笔记本电脑必须启用全盘加密（Windows 使用 BitLocker，macOS 使用 FileVault），"
            "并安装公司统一部署的终端防护软件，不得自行卸载或停用。",
            "离开座位时必须锁定屏幕；设备无操作 5 分钟后自动锁屏。",
            "操作系统和常用软件的安全补丁须在发布后 14 天内安装，高危漏洞补丁须在 72 小时内安装。",
            "公司电脑默认禁用 USB 存储设备；确需使用的，须经部门负责人和信息安全团队审批，"
            "且只能使用公司登记的加密 U 盘。",
            "个人手机访问公司邮件和办公应用，须开启锁屏密码并安装移动设备管理（MDM）配置文件。",
        ]),
        ("h1", "七、网络与远程办公"),
        ("p", "员工在公司以外的地点办公时，必须通过公司 VPN 访问内部系统，并避免使用无密码的公共 "
              "Wi-Fi。禁止私自在办公网络中接入无线路由器、随身 Wi-Fi 等网络设备。访客只能使用访客"
              "网络，访客网络与办公网络相互隔离。"),
        ("h1", "八、数据保护与备份"),
        ("p", "公司对业务数据采用“3-2-1”备份策略：至少保留 3 份数据副本，使用 2 种不同的存储介质，"
              "其中 1 份存放在异地。核心业务系统每天进行增量备份，每周进行一次全量备份，"
              "备份数据至少保留 90 天；财务数据的备份保留 10 年。IT 部门每半年组织一次数据恢复"
              "演练，并形成书面报告。"),
        ("p", "处理个人信息须遵循合法、正当、必要和诚信原则，仅收集实现业务目的所需的最少信息。"
              "含有个人信息的测试数据须先进行脱敏处理。"),
        ("h1", "九、安全事件管理"),
        ("p", "员工发现疑似安全事件（如电脑中毒、账号被盗、数据泄露、收到钓鱼邮件并已点击链接）时，"
              "须在 1 小时内通过邮箱 security@xinghe-tech.example 或 IT 服务台分机 8000 报告，不得"
              "自行处理或隐瞒。安全事件按影响程度分为四级："),
        ("table", [
            ["等级", "说明", "响应时间", "通报对象"],
            ["P1 特别重大", "核心系统中断或大规模数据泄露", "15 分钟内响应",
             "总经理、信息安全委员会"],
            ["P2 重大", "重要系统受影响或机密数据可能泄露", "1 小时内响应", "CISO、相关部门负责人"],
            ["P3 较大", "单个用户或终端受影响", "4 小时内响应", "信息安全团队"],
            ["P4 一般", "可疑事件，暂未造成影响", "1 个工作日内响应", "信息安全团队"],
        ]),
        ("p", "涉及个人信息泄露的事件，须按照法律规定及时告知受影响的个人并向主管部门报告。"
              "事件处置结束后 5 个工作日内，CISO 须组织复盘并提交事件报告。"),
        ("h1", "十、第三方安全管理"),
        ("p", "供应商和外包人员在访问公司信息系统前，须签署保密协议并接受安全培训。第三方的访问权限"
              "遵循最小权限原则，设置明确的到期时间，合同结束时立即收回。涉及机密数据处理的供应商，"
              "须每年接受一次安全评估。"),
        ("h1", "十一、安全培训与意识"),
        ("p", "新员工须在入职 30 天内完成信息安全入门培训并通过考试。全体员工每年至少参加 4 学时的"
              "信息安全培训。信息安全团队每季度组织一次钓鱼邮件演练，演练中点击链接的员工须在 "
              "7 天内完成补充培训。"),
        ("h1", "十二、监督检查与违规处理"),
        ("p", "信息安全团队每年至少开展一次内部安全审计，并可对员工终端进行不定期抽查。"
              "违反本政策的，视情节轻重给予警告、通报批评、降级直至解除劳动合同的处理；造成公司损失的，依法追究"
              "赔偿责任；涉嫌犯罪的，移交司法机关处理。"),
        ("h1", "十三、附则"),
        ("p", "本政策由信息安全委员会负责解释，每年至少评审一次，必要时及时修订。本政策自 2024 年 "
              "1 月 1 日起施行，2022 年 7 月发布的 3.1 版同时废止。相关的实施细则包括《账号与权限"
              "管理规范》《数据分类分级指南》和《安全事件应急预案》。"),
    ],
}

TRAVEL_POLICY: dict[str, Any] = {
    "title": "Travel and Expense Policy",
    "subtitle": "Xinghe Technology Co., Ltd. - policy FIN-TRV-004, version 2.1, effective "
                "1 March 2024. Owner: Finance Department.",
    "author": "Xinghe Technology Finance Department",
    "blocks": [
        ("h1", "1. Purpose and scope"),
        ("p", "This policy explains how employees book business travel and claim travel and "
              "entertainment expenses. It applies to all employees, interns and contractors "
              "who travel on company business, in China and abroad. Travellers are expected to "
              "spend company money as carefully as they would spend their own, to choose the "
              "most economical option that meets the business need, and to keep receipts for "
              "every claim."),
        ("p", "Where local law or a customer contract sets stricter rules, those rules apply. "
              "Questions about this policy should be sent to travel@xinghe-tech.example."),
        ("h1", "2. Before you travel"),
        ("h2", "2.1 Approval"),
        ("p", "Every business trip needs a travel request approved in the expense system before "
              "any booking is made. Domestic trips are approved by the traveller's manager. "
              "International trips, and any trip with an estimated cost above CNY 20,000, also "
              "need the approval of the department head. Trips booked without approval may not "
              "be reimbursed."),
        ("h2", "2.2 Booking channel"),
        ("p", "Flights, trains and hotels must be booked through the company travel agency, "
              "either in the travel app or by phone. The agency applies our negotiated rates "
              "and keeps the traveller's itinerary available to the security team in case of "
              "emergencies. Bookings made elsewhere are reimbursed only if they cost less than "
              "the agency's lowest available fare at the time of booking, shown with a "
              "screenshot."),
        ("h1", "3. Transport"),
        ("h2", "3.1 Air travel"),
        ("p", "Book the lowest logical fare at least 14 days before departure whenever possible. "
              "The class of travel depends on the scheduled flight time of each leg:"),
        ("table", [
            ["Scheduled flight time", "Class allowed", "Extra approval"],
            ["Under 6 hours", "Economy", "None"],
            ["6 to 10 hours", "Premium economy", "None"],
            ["Over 10 hours", "Business", "Vice president"],
        ]),
        ("p", "Checked baggage is reimbursed for trips longer than three days or when carrying "
              "equipment. Airline lounge memberships and seat upgrades paid for personally are "
              "not reimbursed. Frequent flyer miles earned on business trips may be kept, but "
              "they must never influence the choice of airline or fare."),
        ("h2", "3.2 Rail travel"),
        ("p", "For domestic trips where the high-speed train takes less than five hours, travel "
              "by train instead of flying. Second class is the standard; first class is allowed "
              "for journeys longer than three hours."),
        ("h2", "3.3 Ground transport"),
        ("p", "Use public transport, airport express trains or shared shuttles where practical. "
              "Taxis and ride-hailing services are reimbursed for business journeys, for trips "
              "to and from the airport or station, and for travel between 22:00 and 06:00. Car "
              "rental requires manager approval and is limited to compact cars unless four or "
              "more employees travel together. When you use your own car, mileage is paid at "
              "CNY 1.20 per kilometre in China or USD 0.67 per mile abroad, and replaces all "
              "fuel, wear and insurance costs; parking and tolls are reimbursed separately."),
        ("h1", "4. Accommodation"),
        ("p", "Book a standard room at a business hotel close to the place of work. The amounts "
              "below are the maximum nightly rates including taxes and breakfast. If no room is "
              "available within the limit, the travel agency records the reason and the higher "
              "rate is accepted."),
        ("table", [
            ["City tier", "Examples", "Maximum per night"],
            ["Tier 1 (China)", "Beijing, Shanghai, Shenzhen, Guangzhou", "CNY 900"],
            ["Tier 2 (China)", "Hangzhou, Chengdu, Nanjing, Wuhan, Xi'an", "CNY 650"],
            ["Other cities (China)", "All other cities", "CNY 450"],
            ["International A", "New York, London, Tokyo, Singapore, Zurich", "USD 320"],
            ["International B", "All other international cities", "USD 220"],
        ]),
        ("p", "Employees who stay with friends or family instead of a hotel receive a flat "
              "allowance of CNY 150 per night. Hotel minibar, laundry for trips shorter than "
              "five nights, in-room films and late check-out fees are personal expenses."),
        ("h1", "5. Meals and per diem"),
        ("p", "A daily meal allowance (per diem) covers breakfast not included in the hotel "
              "rate, lunch, dinner, snacks and tips. No receipts are needed for the per diem. "
              "On the first and last day of a trip, 75 percent of the per diem is paid. When a "
              "meal is provided by a customer, a conference or the company, deduct 30 percent "
              "for each lunch or dinner provided."),
        ("table", [
            ["Destination", "Per diem"],
            ["Tier 1 cities in China", "CNY 300"],
            ["Other cities in China", "CNY 200"],
            ["International A cities", "USD 90"],
            ["International B cities", "USD 65"],
        ]),
        ("h2", "5.1 Business entertainment"),
        ("p", "Entertaining customers or partners must be approved in advance and is limited to "
              "CNY 300 per person in China or USD 80 per person abroad, including drinks. The "
              "claim must list the names and companies of all attendees. Entertaining "
              "government officials requires prior approval from the Legal Department."),
        ("h1", "6. Claiming expenses"),
        ("ul", [
            "Submit the expense report in the expense system within 30 days of the end of the "
            "trip. Reports submitted after 90 days are not reimbursed.",
            "Attach an itemised receipt or official invoice (fapiao) for every expense over "
            "CNY 100 or USD 25, except the per diem. The company name and tax number must be "
            "correct on every fapiao.",
            "Pay with the corporate card wherever it is accepted; personal cards are allowed "
            "when the corporate card is not accepted.",
            "Foreign currency expenses are converted at the exchange rate shown on the card "
            "statement, or at the company's monthly rate for cash payments.",
            "Approved claims are paid to the employee's salary account within 10 working days.",
        ]),
        ("h1", "7. Expenses that are not reimbursed"),
        ("ul", [
            "Traffic and parking fines, and any costs caused by breaking the law",
            "Travel insurance bought separately (the company policy already covers all trips)",
            "Personal entertainment, spa, gym and minibar charges",
            "Costs of family members or other people travelling with the employee",
            "Lost or stolen personal items, and fees for late cancellation that the traveller "
            "could have avoided",
        ]),
        ("h1", "8. Safety while travelling"),
        ("p", "Before travelling abroad, check the company travel risk page. Travel to countries "
              "rated high risk needs approval from the security team. In an emergency, call the "
              "24-hour assistance line printed on the back of the corporate card. Keep your "
              "laptop with you at all times and connect only through the company VPN."),
        ("h1", "9. Exceptions"),
        ("p", "Exceptions to this policy must be approved in writing by the Chief Financial "
              "Officer before the expense is incurred. Repeated or deliberate breaches of this "
              "policy may lead to disciplinary action and to recovery of the amounts paid."),
    ],
}


ONBOARDING_DECK: list[dict[str, Any]] = [
    {
        "layout": 0,
        "title": "New Employee Onboarding 新员工入职指南",
        "subtitle": "Xinghe Technology Co., Ltd. - People Team, 2024 edition",
        "notes": "Welcome everyone and introduce yourself and the buddy programme. This deck is "
                 "used in the first-day orientation session, which starts at 09:30 in meeting "
                 "room Orion on the 3rd floor and lasts about two hours. Remind new colleagues "
                 "that the slides and the recording are available on the intranet under People "
                 "> Onboarding, and that every newcomer is paired with a buddy from their own "
                 "team for the first 90 days. Ask people to keep their badge visible at all "
                 "times in the office. Then explain the agenda: a short company overview, the "
                 "first-week checklist, equipment by role, how equipment requests are handled, "
                 "and who to contact for help. Point out the fire exits and the assembly point "
                 "in front of the main entrance before you start.",
    },
    {
        "title": "Your first week",
        "bullets": [
            (0, "Day 1: orientation, badge photo and laptop handover"),
            (1, "Collect your badge at the front desk on the 1st floor before 09:15"),
            (1, "IT hands over laptops at the IT service desk, room 3-12, from 13:30"),
            (0, "Day 2: accounts, security training and your team's tools"),
            (1, "Enable multi-factor authentication (MFA) before you first sign in remotely"),
            (1, "Finish the information security e-learning within 30 days"),
            (0, "Day 3-5: meet your manager and buddy, agree on 30-60-90 day goals"),
            (0, "End of week 1: submit your bank details and emergency contact in the HR portal"),
        ],
        "notes": "Walk through the week day by day. Stress that the security training is "
                 "mandatory and must be completed within 30 days of the start date; access to "
                 "customer data is only granted after the test is passed. The 30-60-90 day goals "
                 "are agreed with the manager in the first week and reviewed at the end of the "
                 "probation period, which is three months for most roles and six months for "
                 "managers. If the laptop is not ready on day one, the IT service desk lends a "
                 "temporary device.",
    },
    {
        "title": "入职第一周安排",
        "bullets": [
            (0, "第一天：参加入职培训，领取工牌，完成门禁照片拍摄"),
            (1, "上午 9:15 前到一楼前台报到，凭身份证领取临时工牌"),
            (1, "下午 1:30 起到 3-12 室 IT 服务台领取笔记本电脑"),
            (0, "第二天：开通邮箱、企业微信和 VPN 账号，启用多因素认证"),
            (0, "第三天至第五天：与直属经理和入职伙伴（Buddy）面谈，确定试用期目标"),
            (0, "第一周结束前：在人力资源系统中填写银行卡信息和紧急联系人"),
        ],
        "notes": "提醒新同事：工牌丢失须在 24 小时内向行政部报告，补办费用为 50 元。"
                 "试用期一般为三个月，管理岗位为六个月，试用期内每月与直属经理进行一次面谈。"
                 "入职伙伴负责解答日常问题，例如如何预订会议室、如何申请报销、食堂在几楼等。"
                 "公司食堂位于二楼，午餐时间为 11:30 至 13:30，员工凭工牌刷卡就餐，"
                 "每月餐补 600 元直接充值到工牌。班车信息请在企业微信“行政服务”中查询。",
    },
    {
        "layout": 5,
        "title": "办公设备申领 Equipment by role",
        "table": [
            ["岗位 Role", "笔记本 Laptop", "显示器 Monitors", "手机 Phone", "审批 Approval"],
            ["软件工程师 Software engineer", "MacBook Pro 16\" 36 GB", "2 x 27\" 4K", "No",
             "Manager"],
            ["设计师 Designer", "MacBook Pro 16\" 48 GB", "1 x 32\" 6K", "No", "Manager"],
            ["销售 Sales", "ThinkPad X1 Carbon", "1 x 24\"", "Yes (iPhone)", "Sales director"],
            ["客服 Support", "ThinkPad T14", "2 x 24\"", "Headset only", "Manager"],
            ["实习生 Intern", "ThinkPad T14 (loan)", "1 x 24\"", "No", "Manager + IT"],
        ],
        "notes": "Equipment is requested in the IT portal under Requests > New equipment; the "
                 "standard bundle for each role is pre-selected. Anything outside the table, "
                 "such as a second laptop or a larger monitor, needs the approval of the "
                 "department head and a short business reason. Interns receive loan devices "
                 "that must be returned on their last day. 设备如有损坏，请在 IT 门户提交报修单，"
                 "不要自行拆机维修。",
    },
    {
        "layout": 5,
        "title": "How an equipment request flows",
        "diagram": ["Request", "Approve", "Ship"],
        "caption": "Equipment request flow: Request -> Approve -> Ship",
        "notes": "Explain the three steps. Request: the employee or the manager files the "
                 "request in the IT portal. Approve: the approver named in the table on the "
                 "previous slide approves it, usually within one working day; requests above "
                 "CNY 20,000 also need finance approval. Ship: IT prepares and ships the device, "
                 "or hands it over at the service desk, within three working days of approval. "
                 "The employee signs the asset receipt on delivery; the asset tag number is "
                 "then linked to their account. If a request is rejected, the approver must give "
                 "a reason in the portal and the employee can resubmit it with changes. The "
                 "status of every request is shown under Requests > My requests, and the portal "
                 "sends an email at each step.",
    },
    {
        "layout": 5,
        "title": "常见问题与联系人 FAQ and contacts",
        "columns": [
            "IT 服务台 IT service desk\n分机 8000 / it@xinghe-tech.example\n"
            "工作日 8:30-19:00，3-12 室\nPassword resets, VPN, laptops and phones",
            "人力资源 People team\n分机 8100 / hr@xinghe-tech.example\n"
            "Payroll, leave, contracts and the HR portal\n"
            "薪资、假期、劳动合同与人力资源系统",
        ],
        "notes": "常见问题：忘记密码可以在登录页点击“忘记密码”自助重置，或拨打 IT 服务台分机 8000。"
                 "年假在入职满一年后开始享受，首年按入职月份折算。"
                 "病假须在当天上午 10 点前通知直属经理，并在返岗后三个工作日内上传医院证明。"
                 "Close by asking for questions and sharing the "
                 "feedback survey link; the survey takes five minutes and helps the People team "
                 "improve the programme.",
    },
]


# --- price-limits.xlsx -----------------------------------------------------------------------

TRAVEL_LIMITS_HEADER = [
    "城市类别", "代表城市", "职级", "住宿上限（元/晚）", "伙食补助（元/天）", "市内交通（元/天）",
    "每日合计（元）",
]
TRAVEL_LIMITS = [
    ("一线城市", "北京、上海、广州、深圳", "普通员工", 600, 100, 80),
    ("一线城市", "北京、上海、广州、深圳", "经理及以上", 900, 120, 100),
    ("新一线城市", "成都、杭州、南京、武汉、西安、重庆", "普通员工", 500, 90, 60),
    ("新一线城市", "成都、杭州、南京、武汉、西安、重庆", "经理及以上", 700, 100, 80),
    ("二线城市", "其他省会城市及计划单列市", "普通员工", 400, 80, 50),
    ("二线城市", "其他省会城市及计划单列市", "经理及以上", 550, 90, 60),
    ("其他城市", "地级市、县城及以下", "普通员工", 300, 60, 40),
    ("其他城市", "地级市、县城及以下", "经理及以上", 450, 80, 50),
    ("港澳台地区", "香港、澳门、台北", "全体员工", 1200, 200, 150),
]
TRAVEL_LIMITS_NOTES = [
    ("说明", "住宿上限为含税价格，超出部分由个人承担；两人合住时按职级较高者的标准报销一间。"),
    ("说明", "伙食补助和市内交通按出差自然日包干发放，无需提供发票。"),
]
EQUIPMENT_HEADER = [
    "Device", "Model", "Max price (USD)", "Refresh cycle (years)", "Eligible roles",
    "Approval", "Spare pool",
]
EQUIPMENT = [
    ("Laptop (standard)", "Dell Latitude 7450", 1599.99, 4, "All employees", "Manager", True),
    ("Laptop (engineering)", 'MacBook Pro 14" M3 Pro', 2799, 3, "Engineering, Data science",
     "Manager", True),
    ("Desktop workstation", "Lenovo ThinkStation P3", 3200, 5, "CAD, video editing, ML research",
     "Director", False),
    ('Monitor (27")', "Dell UltraSharp U2724D", 450, 6, "All employees", "None", True),
    ('Monitor (34" ultrawide)', "LG 34WN80C-B", 650, 6, "Engineering, Design", "Manager", False),
    ("Docking station", "Dell WD22TB4", 280, 5, "All employees", "None", True),
    ("Headset", "Jabra Evolve2 65", 229.5, 3, "All employees", "None", True),
    ("Mobile phone", "iPhone 15 or Pixel 8", 900, 3, "Sales, on-call support", "Director", False),
    ("Tablet", 'iPad Air 11"', 750, 4, "Field service, Sales", "Manager", False),
    ("Keyboard and mouse", "Logitech MX Keys + MX Master 3S", 220, 4, "All employees", "None",
     True),
    ("Webcam", "Logitech Brio 4K", 199, 5, "Managers, Sales", "None", False),
    ("Ergonomic chair", "Herman Miller Aeron", 1400, 8, "On medical advice", "HR", False),
]
EQUIPMENT_NOTE = (
    "Prices include tax and shipping. A purchase above the limit needs written approval by the "
    "CFO; devices are replaced early only when repair costs more than half the limit."
)


def make_xlsx(out: Path) -> Path:
    """Write price-limits.xlsx into `out`: a Chinese travel-allowance sheet (a merged cell,
    formulas with cached values, a date) and an English equipment price list."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font

    workbook = Workbook()
    travel = workbook.active
    travel.title = "差旅标准"
    travel.append(TRAVEL_LIMITS_HEADER)
    cached: dict[str, int] = {}
    for row, (tier, cities, grade, hotel, meals, transport) in enumerate(TRAVEL_LIMITS, 2):
        travel.append([tier, cities, grade, hotel, meals, transport, f"=D{row}+E{row}+F{row}"])
        cached[f"G{row}"] = hotel + meals + transport
    # The two first-tier rows share one merged 城市类别 cell, as such tables usually do.
    travel["A3"] = None
    travel.merge_cells("A2:A3")
    travel["A2"].alignment = Alignment(vertical="center")
    travel.append([])
    for label, text in TRAVEL_LIMITS_NOTES:
        travel.append([label, text])
    travel.append(["生效日期", dt.date(2024, 7, 1)])
    equipment = workbook.create_sheet("Equipment")
    equipment.append(EQUIPMENT_HEADER)
    for item in EQUIPMENT:
        equipment.append(list(item))
    equipment.append([])
    equipment.append([EQUIPMENT_NOTE])
    for sheet, widths in ((travel, [12, 34, 12, 18, 18, 18, 16]),
                          (equipment, [24, 32, 16, 20, 32, 12, 12])):
        for cell in sheet[1]:
            cell.font = Font(bold=True)
        for index, width in enumerate(widths):
            sheet.column_dimensions[chr(ord("A") + index)].width = width
    created = dt.datetime(2024, 7, 1, 9, 0, 0)
    workbook.properties.creator = "Finance department"
    workbook.properties.created = created
    buffer = io.BytesIO()
    workbook.save(buffer)
    path = out / "price-limits.xlsx"
    path.write_bytes(_with_cached_values(buffer.getvalue(), "xl/worksheets/sheet1.xml", cached))
    return path


def _with_cached_values(data: bytes, sheet: str, values: dict[str, int]) -> bytes:
    """The package with the formulas' results written in (openpyxl writes formulas without
    them; Excel would calculate them on save), a fixed modification time and member dates."""
    import re

    def cached(match: re.Match[str]) -> str:
        return f"{match.group(1)}<v>{values[match.group(2)]}</v>"

    formula = re.compile(r'(<c r="([A-Z]+[0-9]+)"[^>]*><f>[^<]*</f>)<v\s*/?>(?:</v>)?')
    modified = re.compile(r"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(
        out, "w", zipfile.ZIP_DEFLATED
    ) as target:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == sheet:
                text, count = formula.subn(cached, content.decode("utf-8"))
                if count != len(values):
                    raise RuntimeError(f"{count} formulas found in {sheet}, {len(values)} expected")
                content = text.encode("utf-8")
            elif info.filename == "docProps/core.xml":
                content = modified.sub(r"\g<1>2024-07-01T09:00:00Z\g<2>", content.decode()).encode()
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 7, 1, 9, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, content)
    return out.getvalue()


def make_diagram_pdf(out: Path) -> Path:
    """Write network-architecture-en.pdf into `out`: two A4 pages with headings in larger
    fonts, paragraphs, and a network diagram drawn with Pillow (boxes for the office LAN, the
    firewall and the VPN gateway, arrows and labels) captioned "Figure 1: ..." below it."""
    from reportlab.platypus import Image as PdfImage

    styles = _styles(None)  # tighter spacing than the manual's, so it stays two pages
    styles["body"] = ParagraphStyle("tight", parent=styles["body"], leading=13, spaceBefore=3,
                                    spaceAfter=3)
    styles["h1"] = ParagraphStyle("h1 tight", parent=styles["h1"], spaceBefore=10, spaceAfter=4)
    styles["h2"] = ParagraphStyle("h2 tight", parent=styles["h2"], spaceBefore=6, spaceAfter=3)
    caption = ParagraphStyle("caption", parent=styles["body"], fontSize=9, leading=12,
                             spaceBefore=4, spaceAfter=8)
    diagram = _network_diagram()
    width = (A4[0] - 44 * mm) * 0.9
    story: list[Any] = [
        Paragraph(escape(NETWORK_ARCHITECTURE["title"]), styles["title"]),
        Paragraph(escape(NETWORK_ARCHITECTURE["subtitle"]), styles["subtitle"]),
    ]
    for kind, value in NETWORK_ARCHITECTURE["blocks"]:
        if kind == "figure":
            story.append(PdfImage(io.BytesIO(diagram), width=width, height=width * 520 / 1200))
            story.append(Paragraph(escape(value), caption))
        else:
            story.append(Paragraph(escape(value), styles["body" if kind == "p" else kind]))
    path = out / "network-architecture-en.pdf"
    SimpleDocTemplate(
        str(path), pagesize=A4, leftMargin=22 * mm, rightMargin=22 * mm, topMargin=20 * mm,
        bottomMargin=22 * mm, title=NETWORK_ARCHITECTURE["title"],
        author=NETWORK_ARCHITECTURE["author"], invariant=1,
    ).build(story)
    return path


def _network_diagram() -> bytes:
    """A PNG: Office LAN -> Firewall -> VPN gateway -> data centre, with labelled arrows."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1200, 520), "white")
    draw = ImageDraw.Draw(image)
    title, label, small = (ImageFont.load_default(size=size) for size in (34, 30, 22))
    draw.text((600, 40), "Head office to data centre", fill="#333333", font=title, anchor="mm")
    boxes = [("Office LAN", "10.20.0.0/16"), ("Firewall", "zone policy"),
             ("VPN gateway", "IPsec / IKEv2"), ("Data centre", "10.50.0.0/16")]
    box_w, box_h, top = 230, 150, 170
    gap = (1200 - len(boxes) * box_w) // (len(boxes) + 1)
    for index, (name, detail) in enumerate(boxes):
        left = gap + index * (box_w + gap)
        draw.rounded_rectangle((left, top, left + box_w, top + box_h), radius=20,
                               fill="#dbe9f7", outline="#1f5f9f", width=5)
        draw.text((left + box_w // 2, top + 55), name, fill="#0b2e4f", font=label, anchor="mm")
        draw.text((left + box_w // 2, top + 105), detail, fill="#36506b", font=small,
                  anchor="mm")
        if index + 1 < len(boxes):
            start, end, mid = left + box_w + 6, left + box_w + gap - 6, top + box_h // 2
            draw.line((start, mid, end - 16, mid), fill="#1f5f9f", width=6)
            draw.polygon([(end, mid), (end - 22, mid - 14), (end - 22, mid + 14)], fill="#1f5f9f")
    for index, text in enumerate(["port 443 only", "encrypted tunnel", "internal routes"]):
        centre = gap + box_w + gap // 2 + index * (box_w + gap)
        draw.text((centre, top + box_h + 60), text, fill="#555555", font=small, anchor="mm")
    draw.text((600, 470), "Remote staff connect to the VPN gateway over the internet",
              fill="#333333", font=small, anchor="mm")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


NETWORK_ARCHITECTURE: dict[str, Any] = {
    "title": "Northwind Network Architecture",
    "subtitle": "Infrastructure team - reference design NET-ARCH-02, version 1.4 (April 2024)",
    "author": "Northwind Infrastructure Team",
    "blocks": [
        ("h1", "1. Overview"),
        ("p", "This document describes how the Northwind head office, the branch offices and "
              "remote staff reach the services hosted in the data centre. It is the reference "
              "for anyone who changes firewall rules, adds a site or troubleshoots a connection. "
              "The design has three goals: no internal service is reachable from the internet, "
              "every connection between sites is encrypted, and the failure of one device does "
              "not take a whole site offline."),
        ("p", "All traffic between the office LAN and the data centre passes the firewall and "
              "the VPN gateway, in that order. The firewall decides what may leave the office; "
              "the VPN gateway carries the permitted traffic through an encrypted tunnel to the "
              "data centre, where it is routed to the service networks."),
        ("figure", "Figure 1: Office LAN, firewall and VPN gateway on the path from the head "
                   "office to the data centre"),
        ("h1", "2. Office LAN"),
        ("p", "The head office LAN uses the address range 10.20.0.0/16, split into one VLAN per "
              "purpose: staff workstations (VLAN 20), printers and meeting-room equipment "
              "(VLAN 30), the guest Wi-Fi (VLAN 40) and building systems such as door access and "
              "cameras (VLAN 50). Devices get their addresses from the office DHCP servers; "
              "servers and network devices use fixed addresses from the reserved block "
              "10.20.0.0/24. The guest VLAN reaches only the internet and never the office "
              "networks, and building systems may talk only to their controllers in the data "
              "centre."),
        ("p", "Access switches authenticate every wired port with 802.1X. A laptop that fails "
              "authentication, or is not managed by IT, lands in a quarantine VLAN that offers "
              "nothing but the self-service enrolment page."),
        ("h1", "3. Firewall"),
        ("p", "A pair of firewalls in active-passive mode separates the office LAN from "
              "everything else. The passive unit takes over within three seconds when the active "
              "one stops answering heartbeats, and existing sessions survive the switch because "
              "the session table is synchronised continuously."),
        ("h2", "3.1 Rules"),
        ("p", "Rules are written per zone pair and deny by default. From the staff VLAN, only "
              "HTTPS on port 443, DNS to the internal resolvers and the ports of the approved "
              "collaboration tools are allowed towards the internet. Towards the data centre, "
              "each application has its own rule naming its source VLAN, destination network "
              "and port. Rules without an owner and a ticket number are removed at the "
              "quarterly review."),
        ("h2", "3.2 Logging"),
        ("p", "The firewalls send every denied connection and every administrative login to the "
              "central log platform, where logs are kept for 400 days. An alert fires when more "
              "than 500 connections from one internal address are denied within five minutes, "
              "which usually means malware or a misconfigured device."),
        ("h1", "4. VPN gateway"),
        ("p", "The VPN gateway terminates two kinds of tunnels. Site-to-site tunnels connect the "
              "head office and each branch office to the data centre using IPsec with IKEv2, "
              "AES-256-GCM and certificates issued by the internal certificate authority; "
              "pre-shared keys are not allowed. Remote-access tunnels let staff connect from "
              "home or while travelling with the company VPN client, after signing in with "
              "their account and a second factor."),
        ("p", "Each site has two tunnels over two different internet providers. Routing prefers "
              "the primary tunnel and moves traffic to the backup within ten seconds when the "
              "primary loses three consecutive keep-alive messages. Remote-access users are "
              "placed in a separate address pool, 10.60.0.0/20, so that the firewall in the data "
              "centre can apply stricter rules to them than to office traffic."),
        ("h1", "5. Data centre"),
        ("p", "In the data centre the tunnels end on the core routers, which route traffic to "
              "the service networks: 10.50.10.0/24 for business applications, 10.50.20.0/24 for "
              "databases and 10.50.30.0/24 for management interfaces. Databases accept "
              "connections only from the application network, and management interfaces only "
              "from the jump hosts of the infrastructure team."),
        ("p", "The data centre has its own pair of firewalls between the core routers and the "
              "service networks. They repeat the per-application rules of the office firewall, "
              "so that a mistake in one place does not open a path on its own, and they are the "
              "only devices allowed to reach the internet from the data centre, through a proxy "
              "that logs every request."),
        ("h1", "6. Monitoring"),
        ("p", "The monitoring platform polls every firewall, VPN gateway, router and switch once "
              "a minute and keeps a year of measurements. The on-call engineer is paged when a "
              "site tunnel has been down for more than two minutes, when a firewall pair loses "
              "its standby unit, or when the bandwidth of an internet line stays above 80 percent "
              "for a quarter of an hour. Weekly reports show the busiest tunnels and the rules "
              "that denied the most connections."),
        ("h1", "7. Changes and troubleshooting"),
        ("p", "Every change to firewall rules, VPN settings or routing needs a change ticket "
              "approved by the infrastructure lead, and is made in the maintenance window on "
              "Tuesday evenings unless it fixes an outage. When a user reports that an "
              "application is unreachable, check in this order: the device is in the right "
              "VLAN, the firewall log shows no denied connection, the site tunnel is up on the "
              "VPN gateway, and the service network routes back to the office range."),
    ],
}


if __name__ == "__main__":
    main()
