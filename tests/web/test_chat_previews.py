"""Images and previews on the chat page in a real Chromium against `ragsift serve` and the local
model server: a PDF citation opens its rendered page with the chunk's lines highlighted, an
answer's image (a .docx picture) loads through the API helper as an object URL and shows again
when the conversation is restored, and the sanitiser shows no other image."""

from __future__ import annotations

import io
from typing import Any

from support.fixtures import LLMServer
from web.web_helpers import Browser, LiveServer

PARKING = "How much does parking cost for visitors?"
DIAGRAM = "What does the office network diagram show?"
OTHER_ID = "f" * 32


def parking_pdf() -> bytes:
    """Two A4 pages (reportlab); the parking rules are on page 2."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    pdf.setFont("Helvetica", 12)
    pdf.drawString(72, 760, "Cover page of the facilities handbook.")
    pdf.showPage()
    pdf.setFont("Helvetica", 12)
    pdf.drawString(72, 700, "Parking at the office costs 12 dollars per day for visitors.")
    pdf.drawString(72, 682, "Employees park for free in the underground garage level B2.")
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def diagram_docx() -> bytes:
    """A .docx with a heading, a paragraph and a 200x150 PNG picture (python-docx)."""
    import docx
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (200, 150), (200, 30, 30)).save(picture, "PNG")
    picture.seek(0)
    document = docx.Document()
    document.add_heading("The office network diagram", 1)
    document.add_paragraph("The office network diagram shows the core switch and two access "
                           "points.")
    document.add_picture(picture)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _image_state(browser: Browser, selector: str) -> list[dict[str, Any]]:
    state: list[dict[str, Any]] = browser.driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((img) => ({"
        "asset: img.dataset.asset || null, src: img.getAttribute('src') || '',"
        "complete: img.complete, width: img.naturalWidth, height: img.naturalHeight}))",
        selector)
    return state


def _loaded_images(browser: Browser, selector: str, count: int = 1) -> list[dict[str, Any]]:
    """Wait until `count` images match selector, each decoded from an object URL."""
    def loaded(driver: Any) -> Any:
        images = _image_state(browser, selector)
        done = len(images) == count and all(
            i["src"].startswith("blob:") and i["complete"] and i["width"] > 0 for i in images)
        return images if done else False
    found: list[dict[str, Any]] = browser.wait(loaded, 30, f"{selector}: no loaded image")
    return found


def _ask(browser: Browser, kb_id: str, question: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.css("#kb")).select_by_value(kb_id)
    browser.css("#message").send_keys(question)
    browser.css("#send").click()


def _url_alive(browser: Browser, url: str) -> bool:
    alive: bool = browser.driver.execute_async_script(
        "const [url, done] = arguments;"
        # an image load, since the page's CSP allows blob: for images only
        "const img = new Image(); img.onload = () => done(true);"
        "img.onerror = () => done(false); img.src = url;", url)
    return alive


def test_a_pdf_citation_opens_the_rendered_page_with_the_chunks_lines_highlighted(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    kb_id = live_server.create_kb("facilities")
    live_server.ingest(kb_id, {"parking.pdf": parking_pdf()})
    llm_server.control(chat={"content": "Visitors pay 12 dollars a day [1](citation://1)."})
    turn = live_server.chat(kb_id, PARKING)
    item = turn["evidence"][0]
    page, boxes = item["locator"]["page"], item["locator"]["boxes"]
    assert item["filename"] == "parking.pdf" and page == 2
    assert boxes, "the PDF parser gave this chunk no line boxes"

    browser.open(f"/web/chat?c={turn['conversation_id']}")
    browser.css("article.turn .markdown a.citation").click()

    panel = browser.visible("#evidence-panel")
    browser.wait(lambda d: panel.find_elements("css selector", "[data-part=page][data-loaded]"),
                 30, "the page never loaded")
    [image] = _loaded_images(browser, "#evidence-panel .page-image")
    assert image["width"] >= 400
    facts = {dd.get_attribute("data-fact"): dd.text
             for dd in panel.find_elements("css selector", "dd")}
    assert facts["page"] == "2" and facts["file"] == "parking.pdf"
    shown = panel.find_elements("css selector", ".page-frame .page-box")
    assert len(shown) == len(boxes)
    frame = panel.find_element("css selector", ".page-image").rect
    # the overlay sits where the box is on the page, scaled by image width / page width
    scale = frame["width"] / 595.276
    for element, (x0, y0, x1, y1) in zip(shown, boxes, strict=True):
        rect = element.rect
        assert rect["width"] > 0 and rect["height"] > 0
        assert abs(rect["x"] - frame["x"] - x0 * scale) < 2
        assert abs(rect["y"] - frame["y"] - y0 * scale) < 2
        assert abs(rect["width"] - (x1 - x0) * scale) < 2
        assert abs(rect["height"] - (y1 - y0) * scale) < 2
    browser.screenshot("chat-pdf-page-preview", scroll_to="#evidence-panel .page-box")

    browser.press_escape()
    browser.wait(lambda d: not panel.is_displayed(), 10)
    assert browser.all("#evidence-panel img") == []  # closed: its images are released
    assert browser.console_errors() == []


def test_an_answers_image_loads_with_the_key_helper_and_shows_again_when_restored(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    kb_id = live_server.create_kb("diagrams")
    [document_id] = live_server.ingest(kb_id, {"network.docx": diagram_docx()})
    [asset] = live_server.client.get(f"/api/documents/{document_id}/assets").json()
    answer = (f"It shows the core switch [1](citation://1).\n\n"
              f"![Network diagram](asset://{asset['id']})\n\n"
              f"![remote](https://example.com/x.png) ![other](asset://{OTHER_ID})")
    llm_server.control(chat={"content": answer, "chunk_chars": 9})
    browser.open("/web/chat")

    _ask(browser, kb_id, DIAGRAM)

    browser.visible("article.turn[data-done=true]")
    [live] = _loaded_images(browser, "article.turn .markdown img")
    assert (live["asset"], live["width"], live["height"]) == (asset["id"], 200, 150)
    alt = browser.css("article.turn .markdown img").get_attribute("alt")
    assert alt == "Network diagram"
    conversation_id = browser.wait(lambda d: d.execute_script(
        "return document.querySelector('#conversation-list li.current')"
        "?.dataset.conversationId ?? null"), 10)
    stored = live_server.conversation(conversation_id)["turns"][0]
    assert [a["id"] for a in stored["assets"]] == [asset["id"]]
    browser.screenshot("chat-answer-image")

    browser.driver.refresh()
    browser.wait(lambda d: d.find_element("css selector", "body").get_attribute("data-ready"))
    [restored] = _loaded_images(browser, "article.turn .markdown img")
    assert (restored["asset"], restored["width"]) == (asset["id"], 200)

    browser.css("#new-chat").click()
    browser.click(f'#conversation-list li[data-conversation-id="{conversation_id}"] .open')
    [again] = _loaded_images(browser, "article.turn .markdown img")
    assert browser.console_errors() == []
    # the turn shown before was removed: its object URL is revoked, the new one is alive
    assert again["src"] != restored["src"] and not _url_alive(browser, restored["src"])
    assert _url_alive(browser, again["src"])
    assert [e for e in browser.console_errors() if restored["src"] not in e] == []

    card = browser.css("article.turn .evidence-card")
    assert "1 image" in card.text
    card.click()
    [figure] = _loaded_images(browser, "#evidence-panel [data-part=asset] img")
    assert figure["asset"] == asset["id"]
    browser.screenshot("chat-evidence-image")
    assert browser.console_errors() == []


SANITISE = """(async () => {
  const [allowed, text, done] = arguments;
  const { renderMarkdown } = await import("/web/static/js/markdown.js");
  const target = document.createElement("div");
  const filled = [];
  const images = { fill: (root) => root.querySelectorAll("img").forEach((i) => filled.push(i)) };
  renderMarkdown(target, text, { allowed: new Set([allowed]), images });
  document.body.append(target);
  await new Promise((resolve) => setTimeout(resolve, 200));
  done({ images: [...target.querySelectorAll("img")].map((i) => i.outerHTML),
         filled: filled.length, text: target.textContent,
         pwned: document.body.dataset.pwned || null });
})();"""


def test_the_sanitiser_keeps_only_images_of_allowed_assets_and_drops_every_other(
    browser: Browser,
) -> None:
    allowed = "a" * 32
    text = (f'![ok "x"](asset://{allowed}) ![no](asset://{OTHER_ID}) '
            "![remote](https://example.com/x.png) ![data](data:image/png;base64,iVBORw0KGgo=) "
            "![js](javascript:alert(1)) <img src=x onerror=\"document.body.dataset.pwned=1\"> "
            f'[![nested](asset://{OTHER_ID})](https://example.com) '
            f'![t](asset://{allowed} "title onerror=alert(1)")')
    browser.open("/web/chat")

    result = browser.driver.execute_async_script(SANITISE, allowed, text)

    expected = f'<img class="asset" data-asset="{allowed}" alt="ok &quot;x&quot;">'
    assert result["images"] == [expected, expected.replace('ok &quot;x&quot;', "t")]
    assert result["filled"] == 2
    assert '<img src=x onerror="document.body.dataset.pwned=1">' in result["text"]
    assert result["pwned"] is None


PANEL = """(async () => {
  const [item, done] = arguments;
  const { EvidencePanel } = await import("/web/static/js/evidence.js");
  const aside = document.getElementById("evidence-panel").cloneNode(true);
  aside.id = "test-panel";
  document.body.append(aside);
  new EvidencePanel(aside).open(item, null);
  done(true);
})();"""


def _panel(browser: Browser, item: dict[str, Any]) -> Any:
    browser.driver.execute_script("document.getElementById('test-panel')?.remove()")
    base = {"n": 1, "chunk_id": "c1", "document_id": "d1", "heading_path": [], "score": 0.5,
            "assets": [], "context_text": None}
    browser.driver.execute_async_script(PANEL, base | item)
    return browser.visible("#test-panel")


def _facts(panel: Any) -> dict[str, str]:
    return {dd.get_attribute("data-fact"): dd.text
            for dd in panel.find_elements("css selector", "dd")}


def test_the_panel_shows_sheet_rows_as_a_table_slides_and_records_with_exact_locators(
    browser: Browser,
) -> None:
    browser.open("/web/chat")
    rows = ("| city | limit |\n| --- | --- |\n| Tokyo | 220 |\n"
            '| <img src=x onerror="document.body.dataset.pwned=1"> | 1 |')

    panel = _panel(browser, {"filename": "limits.xlsx", "text": rows,
                             "locator": {"sheet": "Q1 2025", "cell_range": "A1:B3"}})

    assert _facts(panel) == {"file": "limits.xlsx", "sheet": "'Q1 2025'!A1:B3", "chunk": "c1"}
    table = panel.find_element("css selector", "[data-part=sheet] table")
    cells = [[c.text for c in row.find_elements("css selector", "th, td")]
             for row in table.find_elements("css selector", "tr")]
    assert cells == [["city", "limit"], ["Tokyo", "220"],
                     ['<img src=x onerror="document.body.dataset.pwned=1">', "1"]]
    assert panel.find_elements("css selector", "img") == []
    assert "Sheet 'Q1 2025'!A1:B3" in panel.text
    browser.screenshot("chat-panel-sheet")

    panel = _panel(browser, {"filename": "deck.pptx", "text": "Roadmap",
                             "locator": {"slide": 4}})
    assert _facts(panel)["slide"] == "4"
    assert panel.find_element("css selector", "[data-part=slide]").text == "slide 4"

    panel = _panel(browser, {"filename": "items.jsonl", "text": "{\"a\": 1}",
                             "locator": {"record": 3, "pointer": "/items/3"}})
    assert _facts(panel) == {"file": "items.jsonl", "record": "3", "pointer": "/items/3",
                             "chunk": "c1"}
    assert browser.css("body").get_attribute("data-pwned") is None


def test_the_panel_shows_a_faq_entrys_question_standard_answer_and_source(
    browser: Browser,
) -> None:
    browser.open("/web/chat")

    panel = _panel(browser, {"filename": "FAQ", "kind": "faq", "question": "年假有几天？",
                             "heading_path": ["年假有几天？"], "text": "每年十五天带薪年假。",
                             "source": "HR handbook", "chunk_id": "f1", "locator": None})

    assert _facts(panel) == {"question": "年假有几天？", "source": "HR handbook", "faq": "f1"}
    assert panel.find_element("css selector", "[data-part=title]").text == "[1] FAQ"
    assert panel.find_element("css selector", "[data-part=text]").text == "每年十五天带薪年假。"
    assert "Standard answer" in panel.text
