"""Retrieval testing on the debug page (issue 38, item 4) in one real Chromium against a real
`ragsift serve`: every Explain is kept in the KB's query history and a click runs it again; two
configurations of one query are compared side by side with the rank moves (the pure rankMoves
of compare.js, checked in the browser) and each hit's stage scores; both at 1366 and 390 px, in
English and Chinese, with axe finding nothing serious. Also the chat's Regenerate (owed from
stop 34): a new version of the last answer, the old one kept under it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.fixtures import LLMServer
from web.web_helpers import REPO_ROOT, Browser, LiveServer, require_browser

QUERY = "hotel limit per night"
DESKTOP = (1366, 768)
PHONE = (390, 844)
AXE = REPO_ROOT / "tests" / "web" / "vendor" / "axe.min.js"
SERIOUS = ("serious", "critical")


@pytest.fixture(scope="module")
def page(live_server: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One Chromium for the whole module (the tests run in order on it)."""
    require_browser()
    chrome = Browser(live_server.url, Path(tmp_path_factory.mktemp("testing-profile")))
    try:
        yield chrome
    finally:
        chrome.quit()


def _js(browser: Browser, script: str, *args: Any) -> Any:
    return browser.driver.execute_script(script, *args)


def _axe_serious(browser: Browser, context: str = "main") -> list[dict[str, Any]]:
    _js(browser, AXE.read_text(encoding="utf-8"))
    result: dict[str, Any] = browser.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document.querySelector(arguments[0]), {resultTypes: ['violations']})"
        ".then((r) => done({violations: r.violations.map((v) => ({id: v.id, impact: v.impact,"
        "nodes: v.nodes.map((n) => n.target.join(' '))}))}))"
        ".catch((e) => done({error: String(e)}));", context)
    assert "error" not in result, result
    return [v for v in result["violations"] if v["impact"] in SERIOUS]


def _no_sideways_scroll(browser: Browser) -> bool:
    return bool(_js(browser, "const e = document.documentElement;"
                             "return e.scrollWidth <= e.clientWidth"))


def _history(server: LiveServer, kb_id: str) -> list[dict[str, Any]]:
    response = server.client.get(f"/api/kbs/{kb_id}/queries")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _explain(server: LiveServer, **body: Any) -> dict[str, Any]:
    response = server.client.post("/api/retrieval/explain", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def test_rank_moves_mark_up_down_same_new_and_dropped_by_chunk_id(page: Browser) -> None:
    page.open("/web/debug")
    moves = page.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import('/web/static/js/compare.js').then((m) => done(m.rankMoves("
        "['c1', 'c2', 'c3', 'c4'], ['c3', 'c1', 'c5', 'c2', 'c3'])))"
        ".catch((e) => done({error: String(e)}));")
    assert "error" not in moves, moves
    assert [(m["chunkId"], m["move"], m["by"], m["otherRank"]) for m in moves["b"]] == [
        ("c3", "up", 2, 3), ("c1", "down", 1, 1), ("c5", "new", 0, None),
        ("c2", "down", 2, 2)]  # a repeated id counts at its first rank
    assert [(m["chunkId"], m["move"], m["otherRank"]) for m in moves["a"]] == [
        ("c1", "kept", 2), ("c2", "kept", 4), ("c3", "kept", 1), ("c4", "dropped", None)]
    assert moves["dropped"] == [{"chunkId": "c4", "rank": 4}]


def test_each_explain_is_kept_in_the_history_and_a_click_runs_it_again(
    page: Browser, live_server: LiveServer
) -> None:
    from selenium.webdriver.support.ui import Select

    kb_id = live_server.kbs["handbook"]
    live_server.client.delete(f"/api/kbs/{kb_id}/queries")
    page.driver.set_window_size(*DESKTOP)
    page.open(f"/web/debug?kb={kb_id}")
    assert page.css("#history-empty").is_displayed()
    page.css("#query").send_keys(QUERY)
    Select(page.css("#mode")).select_by_value("sparse")
    page.css("#top-k").clear()
    page.css("#top-k").send_keys("3")
    page.css("#rewrite").click()
    page.css("#search-button").click()
    page.wait(lambda d: len(page.all("#history-list li")) == 1, 30, "no history entry")

    [stored] = _history(live_server, kb_id)
    assert stored["query"] == QUERY
    assert stored["options"]["mode"] == "sparse" and stored["options"]["top_k"] == 3
    shown = [r.get_attribute("data-chunk-id")
             for r in page.all("#hits-table tbody tr[data-chunk-id]")]
    assert [h["chunk_id"] for h in stored["hits"]] == shown
    item = page.css("#history-list li")
    assert item.find_element("css selector", ".history-run").text == QUERY
    meta = item.find_element("css selector", ".history-meta").text
    assert re.match(rf"sparse · top 3 · {len(shown)} returned · \d+ ms · ", meta), meta

    # another query and mode, then the history entry puts the first one back and runs it
    page.css("#query").clear()
    page.css("#query").send_keys("meals receipts")
    Select(page.css("#mode")).select_by_value("hybrid")
    page.css("#search-button").click()
    page.wait(lambda d: len(page.all("#history-list li")) == 2, 30)
    page.all("#history-list li .history-run")[1].click()
    page.wait(lambda d: len(page.all("#history-list li")) == 3, 30, "the re-run was not kept")
    assert page.css("#query").get_attribute("value") == QUERY
    assert page.css("#mode").get_attribute("value") == "sparse"
    newest = _history(live_server, kb_id)[0]
    assert newest["query"] == QUERY
    assert {k: newest["options"][k] for k in ("mode", "top_k", "rewrite")} == {
        "mode": "sparse", "top_k": 3, "rewrite": False}
    assert [h["chunk_id"] for h in newest["hits"]] == [h["chunk_id"] for h in stored["hits"]]
    assert _axe_serious(page) == []
    page.screenshot("retrieval-testing-history-1366", scroll_to="#history-title")
    assert page.console_errors() == []


def test_a_history_re_run_restores_every_recorded_option(
    page: Browser, live_server: LiveServer
) -> None:
    """Version, fusion, stage switches, numbers, the filter (as editor rows) and an option the
    form has no control for: the re-run is recorded with exactly the options of the first run."""
    import json

    kb_id = live_server.kbs["handbook"]
    live_server.client.delete(f"/api/kbs/{kb_id}/queries")
    versions = live_server.client.get(f"/api/kbs/{kb_id}/versions").json()
    active = versions["state"]["active_seq"]
    assert active >= 1, versions
    where = {"$or": [{"topic": {"$in": ["travel", "leave"]}}, {"year": {"$gte": 2020}},
                     {"draft": {"$exists": False}}]}
    options = {"mode": "hybrid", "fusion": "weighted", "top_k": 4, "rerank": False,
               "rewrite": False, "small2big": False, "auto_merge": True, "min_score": -5,
               "dense_weight": 2, "sparse_weight": 0.5, "kb_version": active, "filter": where,
               "consistency": True}
    response = live_server.client.post("/api/retrieval/explain?history=true",
                                       json={"kb_id": kb_id, "query": QUERY, **options})
    assert response.status_code == 200, response.text
    [first] = _history(live_server, kb_id)
    assert first["options"] == options
    page.driver.set_window_size(*DESKTOP)
    page.open(f"/web/debug?kb={kb_id}")

    page.css("#history-list .history-run").click()
    page.wait(lambda d: len(page.all("#history-list li")) == 2, 30, "the re-run was not kept")

    assert _history(live_server, kb_id)[0]["options"] == options
    form = {id_: page.css(f"#{id_}").get_attribute("value") for id_ in (
        "mode", "fusion", "top-k", "min-score", "dense-weight", "sparse-weight", "kb-version")}
    assert form == {"mode": "hybrid", "fusion": "weighted", "top-k": "4", "min-score": "-5",
                    "dense-weight": "2", "sparse-weight": "0.5", "kb-version": str(active)}
    assert [page.css(f"#{id_}").is_selected() for id_ in (
        "rerank", "rewrite", "small2big", "auto-merge")] == [False, False, False, True]
    assert json.loads(page.css("#filter-json").text) == where
    assert len(page.all("#filter-rows li")) == 3
    assert page.css("#filter-join").get_attribute("value") == "$or"
    assert page.console_errors() == []


def _marked(page: Browser) -> set[str]:
    """The ids of the search form's controls marked as holding the KB's default."""
    return set(_js(page, "return [...document.querySelectorAll('#search-form .kb-default')]"
                         ".map((b) => b.closest('label').querySelector('input, select').id)"))


def test_the_debug_form_starts_from_the_kbs_default_search_options(
    page: Browser, live_server: LiveServer
) -> None:
    from selenium.webdriver.support.ui import Select

    kb_id = live_server.kbs["handbook"]
    other = live_server.create_kb("no-defaults")
    own = {"mode": "sparse", "top_k": 3, "rerank": False, "fusion": "weighted"}
    response = live_server.client.patch(f"/api/kbs/{kb_id}/settings", json={"set": own})
    assert response.status_code == 200, response.text
    try:
        for size in (PHONE, DESKTOP):
            page.driver.set_window_size(*size)
            page.open(f"/web/debug?kb={kb_id}")
            assert _marked(page) == {"mode", "top-k", "rerank", "fusion"}
            assert page.css("#mode").get_attribute("value") == "sparse"
            assert page.css("#top-k").get_attribute("value") == "3"
            assert page.css("#fusion").get_attribute("value") == "weighted"
            assert not page.css("#rerank").is_selected()
            assert page.css("#small2big").is_selected()  # not the KB's: the page's default
            assert "KB default" in page.css("#kb-defaults-note").text
            assert _no_sideways_scroll(page)
            assert _axe_serious(page) == []
        page.screenshot("debug-kb-defaults-1366", scroll_to="#search-title")

        # the form sends what it shows: the KB's defaults
        before = len(_history(live_server, kb_id))
        page.css("#query").send_keys(QUERY)
        page.css("#search-button").click()
        page.wait(lambda d: len(_history(live_server, kb_id)) == before + 1, 30)
        sent = _history(live_server, kb_id)[0]["options"]
        assert {key: sent[key] for key in own} == own

        Select(page.css("#mode")).select_by_value("hybrid")  # changed: no longer the default
        assert _marked(page) == {"top-k", "rerank", "fusion"}
        Select(page.css("#kb")).select_by_value(other)  # a KB without defaults: the page's
        page.wait(lambda d: not _marked(page), 10, "the marks stayed")
        assert [page.css(f"#{id_}").get_attribute("value") for id_ in (
            "mode", "top-k", "fusion")] == ["hybrid", "5", ""]
        assert page.css("#rerank").is_selected()
        assert not page.css("#kb-defaults-note").is_displayed()
        assert page.console_errors() == []
    finally:
        live_server.client.patch(f"/api/kbs/{kb_id}/settings", json={"unset": list(own)})
        live_server.client.delete(f"/api/kbs/{other}")


def _compare(page: Browser) -> None:
    from selenium.webdriver.support.ui import Select

    Select(page.css("#a-mode")).select_by_value("hybrid")
    page.css("#a-rerank").click()  # A: hybrid, no rerank
    Select(page.css("#b-mode")).select_by_value("sparse")
    page.css("#b-rerank").click()
    page.css("#compare-button").click()
    page.visible("#compare-b li.compare-hit", 30)


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_compare_shows_both_rankings_with_moves_and_stage_scores(
    page: Browser, live_server: LiveServer, size: tuple[int, int]
) -> None:
    kb_id = live_server.kbs["handbook"]
    page.driver.set_window_size(*size)
    page.open(f"/web/debug?kb={kb_id}")
    page.css("#query").send_keys(QUERY)
    _compare(page)

    base = {"kb_id": kb_id, "query": QUERY, "top_k": 5, "rerank": False, "rewrite": False}
    a = _explain(live_server, **base, mode="hybrid")["results"]
    b = _explain(live_server, **base, mode="sparse")["results"]
    column_a = page.all("#compare-a li.compare-hit")
    column_b = page.all("#compare-b li.compare-hit")
    assert [li.get_attribute("data-chunk-id") for li in column_a] == [h["chunk_id"] for h in a]
    assert [li.get_attribute("data-chunk-id") for li in column_b] == [h["chunk_id"] for h in b]
    ranks_a = {h["chunk_id"]: n for n, h in enumerate(a, 1)}
    for n, (li, hit) in enumerate(zip(column_b, b, strict=True), 1):
        before = ranks_a.get(hit["chunk_id"])
        expected = ("new" if before is None else "up" if before > n
                    else "down" if before < n else "same")
        assert li.get_attribute("data-move") == expected, (n, hit["chunk_id"])
    ranks_b = {h["chunk_id"] for h in b}
    dropped = [li.get_attribute("data-chunk-id") for li in column_a
               if li.get_attribute("data-move") == "dropped"]
    assert dropped == [h["chunk_id"] for h in a if h["chunk_id"] not in ranks_b]
    first = column_b[0]
    scores = {s.get_attribute("data-stage"): s.text
              for s in first.find_elements("css selector", ".stage-score")}
    assert scores["sparse"] == f"sparse {b[0]['sparse_score']:.4f}"
    assert scores["fused"] == f"fused {b[0]['fusion_score']:.4f}"
    assert scores["rerank"] == "rerank –"
    assert page.css("#compare-b .compare-config").text.startswith("sparse · – · rerank off")
    assert _no_sideways_scroll(page)
    if size == PHONE:  # the columns stack: B below A
        assert page.css("#compare-b").rect["y"] > page.css("#compare-a").rect["y"]
    assert _axe_serious(page) == []
    page.screenshot(f"retrieval-testing-compare-{'desktop' if size == DESKTOP else 'phone'}",
                    scroll_to=".compare-moves")


def test_history_and_compare_speak_chinese(page: Browser, live_server: LiveServer) -> None:
    from selenium.webdriver.support.ui import Select

    page.driver.set_window_size(*DESKTOP)
    page.open(f"/web/debug?kb={live_server.kbs['handbook']}")
    page.css("#query").send_keys(QUERY)
    _compare(page)
    Select(page.css("#lang-switch")).select_by_value("zh-CN")
    page.wait(lambda d: page.css("#compare-title").text == "对比两种配置")
    assert page.css("#history-title").text == "查询历史"
    assert page.css("#config-b legend").text == "配置 B"
    assert page.css("#compare-button").text == "对比"
    assert page.css(".compare-moves").text.startswith("B 相对 A：")
    assert "毫秒" in page.css("#history-list .history-meta").text
    text = page.css("main").text
    assert "debug." not in text
    for english in ("Query history", "Configuration", "Compare", " up ", "dropped"):
        assert english not in text, english
    assert _axe_serious(page) == []
    page.screenshot("retrieval-testing-zh", scroll_to="#compare-title")
    Select(page.css("#lang-switch")).select_by_value("en")


def test_regenerate_answers_the_last_question_again_and_keeps_the_old_answer(
    page: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    page.driver.set_window_size(*DESKTOP)
    llm_server.control(chat={"content": "First answer: 150 dollars [1](citation://1)."})
    page.open("/web/chat")
    page.css("#message").send_keys("What is the hotel limit per night?")
    page.css("#send").click()
    turn = page.visible("article.turn[data-done=true]", 60)
    assert "First answer" in turn.text
    llm_server.control(chat={"content": "Second answer: still 150 dollars [1](citation://1)."})

    page.click("article.turn .turn-tools button.regenerate", 30)

    # the conversation is read again when the new version is done: it is shown first, the
    # first version folded under it
    shown = page.visible('#thread > article.turn[data-version="2"]', 60)
    assert "Second answer" in shown.text and "First answer" not in shown.text
    summary = shown.find_element("css selector", "details.versions summary")
    assert summary.text == "Version 2 · earlier answers: 1"
    summary.click()
    older = shown.find_element("css selector", 'details.versions article.turn[data-version="1"]')
    assert "First answer" in older.text
    conversation_id = _js(page, "return document.querySelector('#conversation-list li.current')"
                              "?.dataset.conversationId")
    turns = live_server.conversation(conversation_id)["turns"]
    assert len(turns) == 2
    newest = next(t for t in turns if "Second answer" in t["answer"])
    old = next(t for t in turns if t["id"] == newest["version_of"])
    assert newest["version"] == 2 and not newest["superseded"]
    assert old["superseded"] and "First answer" in old["answer"]
    assert _axe_serious(page) == []
    page.screenshot("retrieval-testing-regenerate")


LABELS = [{"query": "hotel limit per night", "relevant": ["hotels.md"]},
          {"query": "how many days of annual leave", "relevant": ["leave.md"]},
          {"query": "firmware update of the router", "relevant": ["firmware.txt"]}]


def _write_labels(folder: Path, lines: list[dict[str, Any]]) -> Path:
    import json

    path = folder / "labels.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_evaluation_view_charts_each_mode_with_intervals(
    page: Browser, live_server: LiveServer, tmp_path: Path
) -> None:
    kb_id = live_server.kbs["handbook"]
    page.driver.set_window_size(*DESKTOP)
    page.open(f"/web/debug?kb={kb_id}")
    page.css("#eval-labels").send_keys(str(_write_labels(tmp_path, LABELS)))
    page.css("#eval-button").click()
    page.visible("#eval-chart", 60)

    response = live_server.client.post(f"/api/kbs/{kb_id}/evaluation", json={
        "feedback": True, "labels": _write_labels(tmp_path, LABELS).read_text(), "k": 10})
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["ran"] and out["uploaded_queries"] == 3
    bars = {(b.get_attribute("data-mode"), b.get_attribute("data-metric")):
            float(b.get_attribute("data-value")) for b in page.all("#eval-chart rect.bar")}
    assert bars == {(m["mode"], metric): m["metrics"][metric] for m in out["modes"]
                    for metric in ("ndcg", "mrr", "recall")}
    whiskers = {(w.get_attribute("data-mode"), w.get_attribute("data-metric"))
                for w in page.all("#eval-chart line.whisker")}
    assert whiskers == {(mode, metric) for mode in ("dense", "sparse")
                        for metric in ("ndcg", "mrr", "recall")}  # none on the baseline
    rows = page.all("#eval-table tbody tr")
    assert [r.get_attribute("data-mode") for r in rows] == ["hybrid", "dense", "sparse"]
    dense = out["modes"][1]["intervals"]["ndcg"]
    cell = page.css('#eval-table tr[data-mode="dense"] td[data-metric="ndcg"]').text
    assert f"[{dense['low']:+.3f}, {dense['high']:+.3f}]" in cell
    assert page.css("#eval-status").text.startswith(f"{out['queries']} labelled queries")
    assert _axe_serious(page) == []
    page.screenshot("retrieval-testing-eval-1366", scroll_to="#eval-status")


def test_a_labels_file_saved_as_a_set_is_evaluated_again_after_a_reload_and_deleted(
    page: Browser, live_server: LiveServer, tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import Select

    kb_id = live_server.kbs["handbook"]
    page.driver.set_window_size(*DESKTOP)
    page.open(f"/web/debug?kb={kb_id}")
    page.css("#eval-labels").send_keys(str(_write_labels(tmp_path, LABELS)))
    page.css("#eval-set-name").send_keys("handbook three")
    page.css("#eval-set-save").click()
    page.wait(lambda d: "Saved" in page.css("#eval-set-status").text, 30)
    [stored] = live_server.client.get(f"/api/kbs/{kb_id}/labelled-sets").json()["items"]
    assert stored["name"] == "handbook three" and stored["queries"] == 3

    page.open(f"/web/debug?kb={kb_id}")  # nothing uploaded now: the set is the server's
    page.css("#eval-feedback").click()  # off: the set alone
    Select(page.css("#eval-set")).select_by_value(stored["id"])
    page.css("#eval-button").click()
    page.visible("#eval-chart", 60)
    out = live_server.client.post(f"/api/kbs/{kb_id}/evaluation", json={
        "feedback": False, "set_id": stored["id"], "k": 10}).json()
    bars = {(b.get_attribute("data-mode"), b.get_attribute("data-metric")):
            float(b.get_attribute("data-value")) for b in page.all("#eval-chart rect.bar")}
    assert bars == {(m["mode"], metric): m["metrics"][metric] for m in out["modes"]
                    for metric in ("ndcg", "mrr", "recall")}
    assert page.css("#eval-status").text.startswith("3 labelled queries")
    assert "set “handbook three”" in page.css("#eval-status").text
    assert _axe_serious(page) == []
    page.screenshot("retrieval-testing-labelled-set-1366", scroll_to="#eval-sets")

    page.driver.set_window_size(*PHONE)
    assert _no_sideways_scroll(page)
    page.css("#eval-set-delete").click()
    page.wait(lambda d: "Deleted" in page.css("#eval-set-status").text, 30)
    assert page.css("#eval-set").get_attribute("value") == ""
    assert live_server.client.get(f"/api/kbs/{kb_id}/labelled-sets").json()["items"] == []
    assert _axe_serious(page) == []
    assert page.console_errors() == []


def test_on_a_phone_a_set_too_big_for_a_request_names_the_cli_command(
    page: Browser, live_server: LiveServer, tmp_path: Path
) -> None:
    page.driver.set_window_size(*PHONE)
    page.open(f"/web/debug?kb={live_server.kbs['handbook']}")
    many = [{**LABELS[n % 3], "id": f"q{n}"} for n in range(51)]  # the default bound: 50
    page.css("#eval-feedback").click()
    page.css("#eval-labels").send_keys(str(_write_labels(tmp_path, many)))
    page.css("#eval-button").click()

    notice = page.visible("#eval-too-large", 30)
    assert "51 labelled queries are more than the 50" in notice.text
    assert "ragsift eval --kb handbook --queries" in notice.text
    assert page.all("#eval-chart") == []
    assert _no_sideways_scroll(page)
    assert _axe_serious(page) == []
    page.screenshot("retrieval-testing-eval-phone", scroll_to="#eval-title")
