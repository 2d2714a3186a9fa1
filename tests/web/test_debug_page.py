"""The retrieval debug page in a real Chromium against a real `ragsift serve` (e5, tantivy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from api.api_helpers import CORRUPT_PDF
from support.fixtures import LLMServer
from web.web_helpers import Browser, LiveServer

QUERY = "hotel limit per night"
CHEAP_CITIES = "The hotel limit per night is 150 dollars in most cities."


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _row_cells(browser: Browser, chunk_id: str) -> dict[str, str]:
    row = browser.css(f'#hits-table tr[data-chunk-id="{chunk_id}"]')
    return {cell.get_attribute("data-col"): cell.text
            for cell in row.find_elements("css selector", "td[data-col]")}


def _explain(server: LiveServer, **body: Any) -> dict[str, Any]:
    response = server.client.post("/api/retrieval/explain", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_upload_form_tracks_each_file_until_ready_or_failed(
    browser: Browser, live_server: LiveServer, tmp_path: Path
) -> None:
    kb_id = live_server.create_kb("uploads")
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\nMeeting rooms are booked through the front desk.\n")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(CORRUPT_PDF)
    browser.open(f"/web/debug?kb={kb_id}")

    browser.css("#upload-files").send_keys(f"{guide}\n{broken}")
    browser.css("#upload-button").click()

    ready = browser.visible('#upload-status li[data-filename="guide.md"][data-status="READY"]')
    failed = browser.visible('#upload-status li[data-filename="broken.pdf"][data-status="FAILED"]')
    assert "READY" in ready.text
    reason = failed.find_element("css selector", ".reason")
    assert reason.is_displayed() and reason.text.strip()
    # the picker is refreshed with the new READY document only
    browser.visible('#doc-list label[data-filename="guide.md"]')
    assert browser.all('#doc-list label[data-filename="broken.pdf"]') == []
    documents = live_server.client.get(f"/api/kbs/{kb_id}/documents").json()
    assert sorted((d["filename"], d["status"]) for d in documents) == [
        ("broken.pdf", "FAILED"), ("guide.md", "READY")]
    browser.screenshot("debug-upload", scroll_to="#upload-status")
    assert browser.console_errors() == []


def test_search_shows_per_stage_scores_and_channel_counts(
    browser: Browser, live_server: LiveServer
) -> None:
    kb_id = live_server.kbs["handbook"]
    browser.open(f"/web/debug?kb={kb_id}")
    browser.css("#query").send_keys(QUERY)
    browser.css("#rewrite").click()  # off: the counts below are those of the original query

    browser.css("#search-button").click()
    browser.visible("#hits-table")

    expected = _explain(live_server, kb_id=kb_id, query=QUERY, mode="hybrid", top_k=5,
                        rewrite=False, rerank=True, small2big=True, auto_merge=False)
    [hit] = [h for h in expected["results"] if h["text"] == CHEAP_CITIES]
    assert _row_cells(browser, hit["chunk_id"]) == {
        "rank": str(hit["rank"]), "file": "hotels.md", "section": "Travel policy › Hotels",
        "text": CHEAP_CITIES,
        "locator": "–",
        "dense": f"{_fmt(hit['dense_score'])}\n#{hit['dense_rank']}",
        "sparse": f"{_fmt(hit['sparse_score'])}\n#1",
        "fused": _fmt(hit["fusion_score"]), "rerank": "–", "final": _fmt(hit["fusion_score"]),
        "sources": "dense:original, sparse:original",
    }
    rows = browser.all("#hits-table tbody tr[data-chunk-id]")  # not the detail rows
    assert [r.get_attribute("data-chunk-id") for r in rows] == [
        h["chunk_id"] for h in expected["results"]]
    # five child chunks in the KB: dense ranks them all, BM25 finds the two hotel chunks, and
    # the second dense channel lists the two Chinese ones (the KB mixes Chinese leave rules
    # with English documents: an English query searches it for its Chinese chunks)
    candidates = {row.get_attribute("data-list"): row.find_element(
        "css selector", 'td[data-col="candidates"]').text
        for row in browser.all("#channels-table tbody tr")}
    assert candidates == {"dense:original": "5", "sparse:original": "2",
                          "second_dense:original": "2"}
    assert browser.css("#trace-variants").text.endswith(f"original {QUERY}")
    assert "none: every requested stage ran" in browser.css("#trace-degradations").text
    rerank = browser.css('#stages-table tr[data-stage="rerank"]').text
    assert rerank == "rerank on no off no reranker configured"
    timings = [r.get_attribute("data-stage") for r in browser.all("#timings-table tbody tr")]
    assert "total" in timings and "channels" in timings
    browser.screenshot("debug-search")
    assert browser.console_errors() == []


def test_a_failed_rewrite_is_shown_as_a_degradation(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    llm_server.control(chat={"mode": "error500"})
    browser.open(f"/web/debug?kb={live_server.kbs['handbook']}")
    browser.css("#query").send_keys(QUERY)
    assert browser.css("#rewrite").is_selected()

    browser.css("#search-button").click()

    try:
        degradation = browser.visible('#trace-degradations li[data-code="rewrite_failed"]')
    finally:
        llm_server.reset()  # later tests of this module search with the rewrite on
    assert degradation.text.startswith("rewrite_failed: ")
    assert browser.css("#trace-degradations h3").text == "Degradations (1)"
    stage = browser.css('#stages-table tr[data-stage="rewrite"] td[data-col="status"]')
    assert stage.text == "failed"
    assert browser.all("#hits-table tbody tr")  # the original query still found evidence
    browser.screenshot("debug-degradation", scroll_to="#trace-degradations")


def test_a_rejected_query_is_shown_as_the_servers_message(browser: Browser,
                                                          live_server: LiveServer) -> None:
    browser.open(f"/web/debug?kb={live_server.kbs['handbook']}")
    browser.css("#query").send_keys("？？？")

    browser.css("#search-button").click()

    error = browser.visible("#search-error")
    # the server's words, without its error code
    assert error.text == "Search failed: query has no letters or digits to search for"
    assert browser.css("#results").get_attribute("hidden") is not None


def test_document_picker_refuses_a_51st_document(browser: Browser,
                                                 live_server: LiveServer) -> None:
    kb_id = live_server.create_kb("many")
    live_server.ingest(kb_id, {f"note-{i:02d}.txt": f"Note {i}: room {i} is on floor {i % 7}."
                               .encode() for i in range(51)})
    browser.open(f"/web/debug?kb={kb_id}")
    boxes = browser.wait(lambda d: (found := d.find_elements(
        "css selector", "#doc-list input[type=checkbox]")) and len(found) == 51 and found)

    for box in boxes[:50]:
        box.click()
    assert browser.css("#doc-count").text == "50 of 50 max"
    assert not browser.css("#doc-limit-message").is_displayed()
    boxes[50].click()

    assert not boxes[50].is_selected()
    message = browser.visible("#doc-limit-message")
    assert message.text.startswith("At most 50 documents can be selected")
    assert browser.css("#doc-count").text == "50 of 50 max"
    browser.css("#query").send_keys("which floor is room 3 on")
    browser.css("#search-button").click()
    summary = browser.visible("#trace-summary")
    assert "50 requested, 50 READY" in summary.text
    browser.screenshot("debug-document-limit")


def test_document_and_query_text_stay_text(browser: Browser, live_server: LiveServer) -> None:
    kb_id = live_server.create_kb("markup")
    payload = '<img src=x onerror="document.body.dataset.pwned=1"> hotel <b>bold</b>'
    live_server.ingest(kb_id, {"markup.txt": payload.encode()})
    browser.open(f"/web/debug?kb={kb_id}")
    browser.css("#query").send_keys("<script>document.body.dataset.pwned=1</script> hotel")

    browser.css("#search-button").click()

    cell = browser.visible('#hits-table td[data-col="text"]')
    assert cell.text == payload
    assert browser.all("#results img, #results script, #results b") == []
    assert "<script>" in browser.css("#trace-summary").text
    assert browser.css("body").get_attribute("data-pwned") is None


def test_narrow_screen_debug_page_has_no_horizontal_scroll(browser: Browser,
                                                           live_server: LiveServer) -> None:
    browser.driver.set_window_size(390, 844)
    browser.open(f"/web/debug?kb={live_server.kbs['handbook']}")
    browser.css("#query").send_keys(QUERY)
    browser.css("#search-button").click()
    browser.visible("#hits-table")

    width = browser.driver.execute_script("return window.innerWidth")
    page = browser.driver.execute_script("return document.documentElement.scrollWidth")
    search = browser.css("#search-form").rect
    results = browser.css("#trace-summary").rect

    assert width <= 420
    assert page <= width  # the wide score table scrolls inside its own box
    assert results["y"] > search["y"] + search["height"]  # one column: results below the form
    browser.screenshot("debug-narrow", scroll_to="#trace-summary")
