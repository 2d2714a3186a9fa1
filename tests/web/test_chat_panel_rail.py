"""The chat page's evidence panel and conversation rail in a real Chromium against `ragsift serve`
and the local model server, at 1366x768 and 390x844: the panel is a modal dialog that slides in
beside a narrowed column (desktop) or is a sheet over a backdrop (phone), keeps Tab inside,
closes on Escape or a click outside and gives the focus back; the sidebar folds to a 64 px icon
rail whose actions work by keyboard and whose state survives a reload; the sidebar's notices
clear when their condition ends; the panel's and rail's strings come in English and Chinese."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from support.fixtures import LLMServer
from web.web_helpers import Browser, LiveServer

DESKTOP = (1366, 768)
PHONE = (390, 844)
QUESTION = "What is the hotel limit per night?"
ANSWER = ("Most cities allow 150 dollars a night [1](citation://1), London and Tokyo allow "
          "220 dollars [2](citation://2).")
JS = Path(__file__).resolve().parents[2] / "src" / "ragsift" / "web" / "static" / "js"

# samples the panel's box on every animation frame until it has rested, fully opaque, for 10
# frames (the slide takes 0.22 s; a loaded machine may start it late), at most 10 s
SAMPLE = """
window.__panelSamples = [];
const started = performance.now();
let resting = 0;
const step = () => {
  const panel = document.getElementById("evidence-panel");
  const box = panel.getBoundingClientRect();
  if (!panel.hidden) {
    const samples = window.__panelSamples;
    const sample = {x: box.x, y: box.y, opacity: +getComputedStyle(panel).opacity};
    const last = samples[samples.length - 1];
    const still = last && last.x === sample.x && last.y === sample.y;
    resting = still && sample.opacity === 1 ? resting + 1 : 0;
    samples.push(sample);
  }
  if (resting < 10 && performance.now() - started < 10000) requestAnimationFrame(step);
};
requestAnimationFrame(step);
"""

# holds each page's GET of one conversation for 1.5 s, as a slow server would
SLOW_OPEN = """
const plain = window.fetch;
window.fetch = (input, init) => {
  const url = String(input?.url || input);
  const get = !init || !init.method || init.method === "GET";
  if (!get || !/\\/api\\/conversations\\/[0-9a-f]{32}$/.test(url)) return plain(input, init);
  return new Promise((done) => setTimeout(done, 1500)).then(() => plain(input, init));
};
"""

ACTIVE_IN_PANEL = ("const a = document.activeElement;"
                   "return document.getElementById('evidence-panel').contains(a)"
                   " ? (a.dataset.part || a.tagName) : 'OUTSIDE:' + a.tagName + '#' + a.id;")


def _size(browser: Browser, size: tuple[int, int]) -> tuple[int, int]:
    browser.driver.set_window_size(*size)
    inner: list[int] = browser.driver.execute_script(
        "return [window.innerWidth, window.innerHeight]")
    return inner[0], inner[1]


def _rect(browser: Browser, selector: str) -> dict[str, float]:
    rect: dict[str, float] = browser.driver.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {x: r.x, y: r.y, width: r.width, height: r.height, right: r.right,"
        " bottom: r.bottom};", selector)
    return rect


def _keys(browser: Browser, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser.driver).send_keys(*keys).perform()


def _shift_tab(browser: Browser) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.TAB) \
        .key_up(Keys.SHIFT).perform()


def _settled(browser: Browser) -> None:
    """Wait until the panel's slide (and the column's narrowing) has finished."""
    def still(driver: Any) -> bool:
        first = _rect(browser, "#evidence-panel")
        time.sleep(0.05)
        return _rect(browser, "#evidence-panel") == first
    browser.wait(still, 10, "the panel never stopped moving")
    time.sleep(0.3)


def _seed(live_server: LiveServer, llm_server: LLMServer, question: str = QUESTION) -> str:
    llm_server.control(chat={"content": ANSWER})
    conversation_id: str = live_server.chat(live_server.kbs["handbook"], question)[
        "conversation_id"]
    return conversation_id


def _open_citation(browser: Browser) -> Any:
    browser.driver.execute_script(SAMPLE)
    link = browser.css("article.turn .markdown a.citation")
    link.click()
    browser.visible("#evidence-panel")
    _settled(browser)
    return link


def _assert_tab_stays_inside(browser: Browser) -> None:
    from selenium.webdriver.common.keys import Keys

    assert browser.driver.execute_script(ACTIVE_IN_PANEL) == "close"
    seen = set()
    for _ in range(5):
        _keys(browser, Keys.TAB)
        where = browser.driver.execute_script(ACTIVE_IN_PANEL)
        assert not where.startswith("OUTSIDE"), where
        seen.add(where)
    assert {"close", "body"} <= seen  # it went round, through the scrollable details
    for _ in range(5):
        _shift_tab(browser)
        where = browser.driver.execute_script(ACTIVE_IN_PANEL)
        assert not where.startswith("OUTSIDE"), where


def _assert_dialog_semantics(browser: Browser) -> None:
    panel = browser.css("#evidence-panel")
    assert panel.tag_name == "section"
    assert panel.get_attribute("role") == "dialog"
    assert panel.get_attribute("aria-modal") == "true"
    title = browser.css("#" + panel.get_attribute("aria-labelledby"))
    assert re.fullmatch(r"\[1\] hotels\.md", title.text)
    assert browser.driver.execute_script(
        "return [...document.body.children].filter((e) => e.tagName === 'MAIN'"
        " || e.tagName === 'HEADER').every((e) => e.inert)")


def test_desktop_panel_slides_in_beside_a_narrowed_column_traps_tab_and_gives_focus_back(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    conversation_id = _seed(live_server, llm_server)
    width, height = _size(browser, DESKTOP)
    assert width >= 1300
    browser.open(f"/web/chat?c={conversation_id}")
    before = _rect(browser, "#thread")

    link = _open_citation(browser)

    panel = _rect(browser, "#evidence-panel")
    assert abs(panel["right"] - width) < 1 and panel["y"] == 0 and panel["height"] == height
    assert 400 <= panel["width"] <= 0.5 * width
    samples = browser.driver.execute_script("return window.__panelSamples")
    assert samples and max(s["x"] for s in samples) > panel["x"] + 100  # it slid in
    assert samples[-1]["x"] == panel["x"] and samples[-1]["opacity"] == 1
    assert min(s["opacity"] for s in samples) < 0.9  # and faded in
    # the answer column narrowed beside the panel, and the cited sentence is not covered
    thread = _rect(browser, "#thread")
    assert thread["right"] <= panel["x"] + 1 and thread["width"] < before["width"] - 300
    cited = _rect(browser, "article.turn .markdown a.citation")
    assert cited["right"] <= panel["x"] and cited["x"] >= thread["x"]
    assert thread["y"] <= cited["y"] and cited["bottom"] <= thread["bottom"]
    point = browser.driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2).id", link)
    assert point == "evidence-backdrop"  # seen through the clear backdrop, not clickable
    _assert_dialog_semantics(browser)
    browser.screenshot("chat-panel-desktop-open")

    _assert_tab_stays_inside(browser)
    browser.press_escape()

    browser.wait(lambda d: not d.find_element("css selector", "#evidence-panel").is_displayed(),
                 10, "Escape did not close the panel")
    assert browser.driver.switch_to.active_element == link
    assert not browser.css("#evidence-backdrop").is_displayed()
    browser.wait(lambda d: _rect(browser, "#thread")["width"] == before["width"], 5,
                 "the column did not widen again")
    assert browser.driver.execute_script("return document.querySelector('main').inert") is False

    # a click outside (on the answer column) closes it as well
    link = _open_citation(browser)
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).move_to_element_with_offset(
        browser.css("#evidence-backdrop"), -int(width / 2) + 400, 0).click().perform()
    browser.wait(lambda d: not d.find_element("css selector", "#evidence-panel").is_displayed(),
                 10, "a click outside did not close the panel")
    assert browser.driver.switch_to.active_element == link
    assert browser.console_errors() == []


def test_phone_panel_is_a_sheet_over_a_dimmed_backdrop_with_the_same_keyboard_rules(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    conversation_id = _seed(live_server, llm_server)
    width, height = _size(browser, PHONE)
    assert width <= 420
    browser.open(f"/web/chat?c={conversation_id}")

    link = _open_citation(browser)

    panel = _rect(browser, "#evidence-panel")
    assert panel["x"] == 0 and panel["width"] == width and abs(panel["bottom"] - height) < 1
    assert 0 < panel["y"] <= 80  # a sheet over nearly the whole screen
    samples = browser.driver.execute_script("return window.__panelSamples")
    assert samples and max(s["y"] for s in samples) > panel["y"] + 200  # it slid up
    backdrop = _rect(browser, "#evidence-backdrop")
    assert (backdrop["x"], backdrop["y"], backdrop["width"], backdrop["height"]) == (
        0, 0, width, height)
    alpha = browser.driver.execute_script(
        "const c = getComputedStyle(document.getElementById('evidence-backdrop'))"
        ".backgroundColor.match(/[\\d.]+/g).map(Number); return c.length > 3 ? c[3] : 1")
    assert alpha >= 0.3  # dimmed
    assert browser.driver.execute_script(
        "return document.elementFromPoint(arguments[0] / 2, 10).id", width) == "evidence-backdrop"
    _assert_dialog_semantics(browser)
    browser.screenshot("chat-panel-phone-sheet")

    _assert_tab_stays_inside(browser)
    browser.press_escape()
    browser.wait(lambda d: not d.find_element("css selector", "#evidence-panel").is_displayed(),
                 10, "Escape did not close the sheet")
    assert browser.driver.switch_to.active_element == link

    link = _open_citation(browser)
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).move_to_element_with_offset(
        browser.css("#evidence-backdrop"), 0, -int(height / 2) + 10).click().perform()
    browser.wait(lambda d: not d.find_element("css selector", "#evidence-panel").is_displayed(),
                 10, "a tap on the backdrop did not close the sheet")
    assert browser.driver.switch_to.active_element == link
    assert browser.console_errors() == []


def _conversation_ids(browser: Browser) -> list[str]:
    ids: list[str] = browser.driver.execute_script(
        "return [...document.querySelectorAll('#conversation-list li[data-conversation-id]')]"
        ".map((li) => li.dataset.conversationId)")
    return ids


def _active(browser: Browser) -> dict[str, Any]:
    found: dict[str, Any] = browser.driver.execute_script(
        "const a = document.activeElement; const li = a.closest('li[data-conversation-id]');"
        "return {id: a.id, cls: a.className, row: li ? li.dataset.conversationId : null}")
    return found


def test_desktop_sidebar_folds_to_a_64px_rail_whose_actions_work_by_keyboard_and_is_kept(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    from selenium.webdriver.common.keys import Keys

    older = _seed(live_server, llm_server, "Rail older question")
    newer = _seed(live_server, llm_server, "Rail newer question")
    _size(browser, DESKTOP)
    browser.open(f"/web/chat?c={newer}")
    toggle = browser.css("#rail-toggle")
    assert _rect(browser, "#chat-side")["width"] == 272
    assert toggle.get_attribute("aria-expanded") == "true"
    assert toggle.get_attribute("aria-controls") == "chat-side"

    browser.driver.execute_script("document.getElementById('rail-toggle').focus()")
    _keys(browser, Keys.ENTER)

    assert toggle.get_attribute("aria-expanded") == "false"
    browser.wait(lambda d: _rect(browser, "#chat-side")["width"] == 64, 5, "not folded to 64 px")
    assert _rect(browser, "#thread")["x"] == 64
    assert browser.storage()["local"]["ragsift.rail"] == "folded"
    assert not browser.css("#kb").is_displayed()
    new_chat = browser.css("#new-chat")
    assert new_chat.is_displayed() and new_chat.accessible_name == "New chat"
    rows = {li.get_attribute("data-conversation-id"): li
            for li in browser.all("#conversation-list li[data-conversation-id]")}
    for conversation_id, title in ((newer, "Rail newer question"),
                                   (older, "Rail older question")):
        button = rows[conversation_id].find_element("css selector", ".open")
        assert button.is_displayed()
        assert button.find_element("css selector", ".initial").text == "R"  # what shows
        hidden_title = button.find_element("css selector", ".title").rect
        assert hidden_title["width"] <= 1 and hidden_title["height"] <= 1
        assert button.accessible_name == title and button.get_attribute("title") == title
        assert button.rect["x"] >= 0 and button.rect["x"] + button.rect["width"] <= 64
        assert rows[conversation_id].get_attribute("data-generating") is None  # none writes
    deletes = [b for b in browser.all("#conversation-list .delete") if b.is_displayed()]
    assert [b.find_element("xpath", "..").get_attribute("data-conversation-id")
            for b in deletes] == [newer]  # only the current one's
    assert deletes[0].accessible_name == "Delete conversation: Rail newer question"
    side = browser.css("#chat-side")
    assert side.get_property("scrollWidth") <= side.get_property("clientWidth")
    browser.screenshot("chat-rail-folded")

    # keyboard only: New chat, then open the older one, then delete it
    _keys(browser, Keys.TAB)
    assert _active(browser)["id"] == "new-chat"
    _keys(browser, Keys.ENTER)
    browser.wait(lambda d: "c=" not in d.current_url, 5, "New chat did not start a draft")
    browser.driver.execute_script("document.getElementById('new-chat').focus()")
    while _active(browser)["row"] != older:
        _keys(browser, Keys.TAB)
        assert _active(browser)["row"] is not None or _active(browser)["id"] == "side-notice"
    assert "open" in _active(browser)["cls"]
    _keys(browser, Keys.ENTER)
    browser.wait(lambda d: f"c={older}" in d.current_url, 10, "the conversation did not open")
    assert browser.css("article.turn .question").text == "Rail older question"
    assert _active(browser) == {"id": "", "cls": "open", "row": older}  # kept on re-render
    _keys(browser, Keys.TAB)
    assert _active(browser)["cls"] == "delete" and _active(browser)["row"] == older
    browser.driver.execute_script(SLOW_OPEN)  # the next conversation loads slowly
    _keys(browser, Keys.ENTER)
    assert "Rail older question" in browser.accept_confirm()
    browser.wait(lambda d: older not in _conversation_ids(browser), 10)
    assert older not in browser.driver.current_url  # at once, before the next one has loaded
    assert live_server.client.get(f"/api/conversations/{older}").status_code == 404

    browser.driver.refresh()
    browser.wait(lambda d: d.find_element("css selector", "body").get_attribute("data-ready"))
    assert _rect(browser, "#chat-side")["width"] == 64
    assert browser.css("#rail-toggle").get_attribute("aria-expanded") == "false"

    browser.driver.execute_script("document.getElementById('rail-toggle').focus()")
    _keys(browser, Keys.SPACE)
    browser.wait(lambda d: _rect(browser, "#chat-side")["width"] == 272, 5, "not unfolded")
    assert browser.css("#rail-toggle").get_attribute("aria-expanded") == "true"
    assert browser.css("#kb").is_displayed()
    browser.driver.refresh()
    browser.wait(lambda d: d.find_element("css selector", "body").get_attribute("data-ready"))
    assert _rect(browser, "#chat-side")["width"] == 272
    assert browser.storage()["local"]["ragsift.rail"] == "expanded"
    assert browser.console_errors() == []


def test_on_a_phone_the_rail_does_not_apply_and_the_list_folds_under_its_toggle(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    conversation_id = _seed(live_server, llm_server, "Phone rail question")
    width, _ = _size(browser, PHONE)
    browser.open("/web/chat")
    browser.driver.execute_script("localStorage.setItem('ragsift.rail', 'folded')")
    browser.open(f"/web/chat?c={conversation_id}")

    assert not browser.css("#rail-toggle").is_displayed()
    assert _rect(browser, "#chat-side")["width"] == width
    toggle = browser.css("#side-toggle")
    assert toggle.is_displayed() and not browser.css("#conversation-list").is_displayed()
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    row = browser.visible(f'#conversation-list li[data-conversation-id="{conversation_id}"]')
    title = row.find_element("css selector", ".open .title")
    assert title.is_displayed() and title.text == "Phone rail question"  # titles, not initials
    assert not row.find_element("css selector", ".open .initial").is_displayed()
    assert browser.css("#kb").is_displayed()
    browser.screenshot("chat-rail-phone-list")


def _block_conversations(browser: Browser, blocked: bool) -> None:
    browser.driver.execute_cdp_cmd("Network.enable", {})
    browser.driver.execute_cdp_cmd(
        "Network.setBlockedURLs", {"urls": ["*/api/conversations*"] if blocked else []})


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_sidebar_error_clears_once_the_server_answers_again(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer, size: tuple[int, int]
) -> None:
    conversation_id = _seed(live_server, llm_server, "Notice question")
    _size(browser, size)
    _block_conversations(browser, True)
    browser.open("/web/chat")
    notice = browser.css("#side-notice")
    text = notice.get_attribute("textContent")
    assert text.startswith("Could not list conversations:") and notice.get_attribute(
        "hidden") is None
    assert browser.all("#conversation-list li[data-conversation-id]") == []

    _block_conversations(browser, False)

    browser.wait(lambda d: d.find_element("css selector", "#side-notice")
                 .get_attribute("hidden") is not None, 20, "the notice stayed")
    assert browser.css("#side-notice").get_attribute("textContent") == ""
    browser.wait(lambda d: conversation_id in _conversation_ids(browser), 10,
                 "the list never loaded")
    assert browser.console_errors() == [] or all(
        "ERR_BLOCKED_BY_CLIENT" in e for e in browser.console_errors())


def test_a_not_deleted_notice_clears_when_the_answer_ends(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    llm_server.control(chat={"deltas": ["The hotel limit ", "[1](citation://1)"] + [" more"] * 40,
                             "delay_s": 0.25})
    _size(browser, DESKTOP)
    browser.open("/web/chat")
    browser.css("#message").send_keys("hotel limit, slowly, for the notice")
    browser.css("#send").click()
    row = browser.visible("#conversation-list li.current")
    row.find_element("css selector", ".delete").click()
    browser.accept_confirm()
    notice = browser.visible("#side-notice")
    assert notice.text.startswith("Not deleted:")

    browser.css("#stop").click()

    browser.wait(lambda d: not d.find_element("css selector", "#side-notice").is_displayed(),
                 20, "the notice stayed after the answer ended")
    browser.wait(lambda d: not d.find_elements("css selector", "#conversation-list .generating"),
                 20, "the list still says generating")


def test_panel_and_rail_speak_chinese_and_rerender_on_a_language_switch(
    browser: Browser, live_server: LiveServer, llm_server: LLMServer
) -> None:
    conversation_id = _seed(live_server, llm_server, "Chinese rail question")
    _size(browser, DESKTOP)
    browser.open("/web/chat")
    browser.driver.execute_script("localStorage.setItem('ragsift.lang', 'zh-CN')")
    browser.open(f"/web/chat?c={conversation_id}")

    assert browser.css("#new-chat").accessible_name == "新对话"
    assert browser.css("#rail-toggle").accessible_name == "对话侧边栏"
    assert browser.css("#chat-side").get_attribute("aria-label") == "对话"
    row = f'#conversation-list li[data-conversation-id="{conversation_id}"]'
    assert "1 轮" in browser.wait(lambda d: browser.css(f"{row} .meta").text, 10)
    assert browser.wait(lambda d: browser.css(f"{row} .delete").accessible_name, 10) == (
        "删除对话：Chinese rail question")
    _open_citation(browser)
    panel = browser.css("#evidence-panel")
    assert panel.find_element("css selector", "[data-part=close]").text == "关闭"
    terms = [dt.text for dt in panel.find_elements("css selector", "dt")]
    assert terms[0] == "文件" and terms[-1] == "分块" and "章节" in terms
    assert "原文" in [h3.text for h3 in panel.find_elements("css selector", "h3")]
    browser.screenshot("chat-panel-chinese")

    browser.driver.execute_async_script(
        "const done = arguments[0];"
        "import('/web/static/js/i18n.js').then((m) => { m.setLanguage('en'); done(); });")

    browser.wait(lambda d: panel.find_element("css selector", "dt").text == "File", 5)
    assert panel.find_element("css selector", "[data-part=close]").text == "Close"
    assert browser.css("#evidence-panel").is_displayed()  # still open, re-rendered
    browser.press_escape()
    browser.wait(lambda d: not panel.is_displayed(), 10)
    assert browser.css("#new-chat").accessible_name == "New chat"
    assert browser.css("#rail-toggle").get_attribute("title") == "Fold the sidebar to icons"
    assert "1 turn" in browser.css(
        f'#conversation-list li[data-conversation-id="{conversation_id}"] .meta').text


KEY_USE = re.compile(r"""\bt\(\s*["'`]((?:panel|rail)\.[\w.]+)["'`]""")
TURNS_USE = re.compile(r"""["']((?:panel|rail)\.[\w.]+)["']""")


def _catalogue(language: str) -> set[str]:
    source = (JS / "strings" / "panel.js").read_text(encoding="utf-8")
    start = source.index(f'{language}: {{' if language == "en" else f'"{language}": {{')
    end = source.index("\n  },", start)
    return set(re.findall(r'^\s*"([\w.]+)":', source[start:end], flags=re.M))


def test_every_panel_and_rail_key_used_is_in_both_catalogues() -> None:
    english, chinese = _catalogue("en"), _catalogue("zh-CN")
    assert english and english == chinese
    used: set[str] = set()
    for name in ("evidence.js", "conversations.js", "dialog.js"):
        source = (JS / name).read_text(encoding="utf-8")
        used |= set(KEY_USE.findall(source))
        used |= {key for key in TURNS_USE.findall(source) if key.endswith((".one", ".other"))}
    assert used and used - english == set()
    # no English sentence left outside the catalogue in the text these files build
    for name in ("evidence.js", "conversations.js"):
        source = (JS / name).read_text(encoding="utf-8")
        code = "\n".join(line for line in source.splitlines()
                         if not line.lstrip().startswith(("//", "*", "/*")))
        assert not re.findall(r'h\("[a-z0-9]+", \{[^}]*\}, "[A-Z][a-z]+ ', code), name
