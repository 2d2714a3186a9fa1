"""The pages' languages: the catalogues (js/strings/*.js) hold every key the pages use, in
English and Simplified Chinese alike; a Chinese browser gets Chinese pages; the header's switch
re-renders a page in the other language and the choice outlives a reload.

The catalogue checks read the files (no browser): every `t("key")`, every key-shaped literal of a
catalogue's area (`"documents.faq.edit"` in `t(cond ? "a" : "b")`), every `countKey("base", n)`
(base.one and base.many) in the js files, and every data-i18n / data-i18n-attr key of the HTML
pages, must be in both languages, with the same {placeholders}.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from web.web_helpers import REPO_ROOT, Browser, LiveServer, handbook_server, require_browser

WEB = REPO_ROOT / "src" / "ragsift" / "web"
JS = WEB / "static" / "js"
STRINGS = JS / "strings"
PAGES = WEB / "pages"
LANGUAGES = ("en", "zh-CN")
KEY = r"[A-Za-z][\w-]*(?:\.[\w-]+)+"
# a key still showing as itself (a missing string) somewhere in a page's text
SHOWN_KEY = re.compile(r"\b(?:common|documents|chat|debug|panel|evidence|trace|rail|settings)"
                       r"\.[a-z][\w]*(?:\.[\w-]+)*\b")


# ---------- the catalogues, read from the files ----------

def _blocks(source: str) -> dict[str, str]:
    """The text of the `en: {...}` and `"zh-CN": {...}` objects of a register() call."""
    starts = {lang: re.search(rf'(?m)^\s*(?:"{re.escape(lang)}"|{re.escape(lang)})\s*:\s*\{{',
                              source) for lang in LANGUAGES}
    blocks = {}
    for lang, match in starts.items():
        assert match, f"no {lang} block"
        depth, index = 1, match.end()
        in_string: str | None = None
        while depth:
            char = source[index]
            if in_string:
                if char == "\\":
                    index += 1
                elif char == in_string:
                    in_string = None
            elif char in "\"'`":
                in_string = char
            elif char == "/" and source[index + 1] == "/":
                index = source.index("\n", index)
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            index += 1
        blocks[lang] = source[match.end():index - 1]
    return blocks


def _entries(block: str) -> list[tuple[str, str]]:
    """(key, text) of each `"key": "text" + "more"` entry (texts concatenated)."""
    entries = []
    block = re.sub(r"(?m)^\s*//.*$", "", block)
    pattern = re.compile(rf'"({KEY})"\s*:\s*((?:"(?:[^"\\]|\\.)*"\s*(?:\+\s*)?)+)')
    for match in pattern.finditer(block):
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(2))
        entries.append((match.group(1), "".join(parts)))
    return entries


def catalogues() -> dict[str, dict[str, dict[str, str]]]:
    """{area: {lang: {key: text}}} for every js/strings/<area>.js."""
    found = {}
    for path in sorted(STRINGS.glob("*.js")):
        blocks = _blocks(path.read_text(encoding="utf-8"))
        found[path.stem] = {lang: dict(_entries(block)) for lang, block in blocks.items()}
    return found


def _duplicates(path: Path) -> dict[str, list[str]]:
    blocks = _blocks(path.read_text(encoding="utf-8"))
    repeated = {}
    for lang, block in blocks.items():
        keys = [key for key, _ in _entries(block)]
        repeated[lang] = sorted({key for key in keys if keys.count(key) > 1})
    return repeated


def used_keys() -> dict[str, set[str]]:
    """{key: {files using it}} over the js modules (not the catalogues) and the HTML pages."""
    areas = {path.stem for path in STRINGS.glob("*.js")}
    used: dict[str, set[str]] = {}

    def use(key: str, where: Path) -> None:
        used.setdefault(key, set()).add(str(where.relative_to(REPO_ROOT)))

    for path in sorted(JS.glob("*.js")):
        if path.name == "i18n.js":
            continue
        source = path.read_text(encoding="utf-8")
        source = re.sub(r"(?m)^\s*//.*$", "", source)  # comments name keys as examples
        bases = set(re.findall(rf'countKey\(\s*"({KEY})"', source))
        for base in bases:
            use(f"{base}.one", path)
            use(f"{base}.many", path)
        for key in re.findall(rf'\bt\(\s*"({KEY})"', source):
            use(key, path)
        for key in re.findall(rf'"({KEY})"', source):
            if key.split(".")[0] in areas and key not in bases and not re.search(
                    r"\.(js|css|html|json|md)$", key):
                use(key, path)
        for spec in re.findall(r'i18nAttr\s*[:=]\s*"([^"]+)"', source):
            for pair in spec.split(";"):
                use(pair.split(":", 1)[1].strip(), path)
    for path in sorted(PAGES.glob("*.html")):
        source = path.read_text(encoding="utf-8")
        for key in re.findall(r'data-i18n="([^"]+)"', source):
            use(key, path)
        for spec in re.findall(r'data-i18n-attr="([^"]+)"', source):
            for pair in spec.split(";"):
                use(pair.split(":", 1)[1].strip(), path)
    return used


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", text))


def test_the_catalogue_reader_sees_every_entry_and_a_missing_key() -> None:
    """The reader itself: a made-up catalogue's entries, concatenated texts and nested braces."""
    source = ('register({\n  en: {\n    "x.a": "A {n}",\n    "x.b": "one "\n      + "two",\n'
              '    // "x.comment": "no",\n    "x.c": "{\\"q\\"} brace",\n  },\n'
              '  "zh-CN": {\n    "x.a": "甲 {n}",\n  },\n});\n')
    blocks = _blocks(source)
    assert dict(_entries(blocks["en"])) == {"x.a": "A {n}", "x.b": "one two",
                                            "x.c": '{\\"q\\"} brace'}
    assert dict(_entries(blocks["zh-CN"])) == {"x.a": "甲 {n}"}


def test_both_languages_have_the_same_keys_and_placeholders() -> None:
    found = catalogues()
    assert {"common", "documents"} <= set(found)
    problems = []
    for area, langs in found.items():
        en, zh = langs["en"], langs["zh-CN"]
        assert en, f"{area}.js: no English strings read"
        problems += [f"{area}.js: {key} only in English" for key in sorted(set(en) - set(zh))]
        problems += [f"{area}.js: {key} only in Chinese" for key in sorted(set(zh) - set(en))]
        problems += [f"{area}.js: {key} has {_placeholders(en[key])} in English but "
                     f"{_placeholders(zh[key])} in Chinese"
                     for key in sorted(set(en) & set(zh))
                     if _placeholders(en[key]) != _placeholders(zh[key])]
        for lang, keys in _duplicates(STRINGS / f"{area}.js").items():
            problems += [f"{area}.js: {key} twice in {lang}" for key in keys]
        # a Chinese string that is English text (a copy, not a translation) is a missing one
        problems += [f"{area}.js: {key} is not translated: {zh[key]!r}" for key in sorted(zh)
                     if re.search(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}", zh[key])
                     and not re.search(r"[\u4e00-\u9fff]", zh[key])]
    # one key, one catalogue: two areas defining it would override each other by import order
    owners: dict[str, list[str]] = {}
    for area, langs in found.items():
        for key in langs["en"]:
            owners.setdefault(key, []).append(area)
    problems += [f"{key} is in {' and '.join(areas)}" for key, areas in sorted(owners.items())
                 if len(areas) > 1]
    assert problems == []


def test_every_key_the_pages_use_is_in_both_catalogues() -> None:
    keys: dict[str, set[str]] = {}
    for langs in catalogues().values():
        for lang in LANGUAGES:
            for key in langs[lang]:
                keys.setdefault(key, set()).add(lang)
    used = used_keys()
    assert len(used) > 150  # the reader found the pages' keys
    missing = {key: sorted(files) for key, files in sorted(used.items())
               if keys.get(key) != set(LANGUAGES)}
    assert missing == {}


def test_the_key_check_catches_a_key_missing_from_the_catalogues(tmp_path: Path) -> None:
    """A js file using a key no catalogue has is reported (the check can fail)."""
    assert "common.nav.chat" in used_keys()
    source = 'import { t } from "./i18n.js";\nt("common.never.defined");\n'
    keys = set(re.findall(rf'\bt\(\s*"({KEY})"', source))
    defined = {key for langs in catalogues().values() for key in langs["en"]}
    assert keys - defined == {"common.never.defined"}


# literals of the modules that are not text for people: key names, CSS classes, fact ids
NOT_TEXT = {"Enter", "Escape", "Tab", "Question", "Source", "File", "Chunk"}


def english_literals(source: str) -> list[str]:
    """The English-looking literals of a module outside comments, t() keys and class names:
    a sentence (`"Delete " + name`), a phrase with a number (`${n} of ${max} max`), a word."""
    code = "\n".join(line for line in source.splitlines()
                     if not line.lstrip().startswith(("//", "*", "/**")))
    code = re.sub(r'\bclass(?:Name)?\s*[:=]\s*(?:"[^"]*"|`[^`]*`)', "", code)
    found = []
    for literal in re.findall(r'"([^"\\\n]*)"|`([^`]*)`', code):
        text = literal[0] or literal[1]
        words = re.sub(r"\$\{[^}]*\}", " ", text)
        if text in NOT_TEXT or re.fullmatch(KEY, text):
            continue
        if (re.search(r"[A-Z][a-z]+ [a-z]+", words) or re.search(r"^[a-z]+ [a-z]+ [a-z]+", words)
                or re.search(r"[a-z]{2,} [A-Z]{3,} [a-z]{2,}", words)
                or (re.search(r"\$\{", text) and re.search(r"\b(of|max|all)\b", words))
                or re.fullmatch(r"[A-Z][a-z]{2,}", text)):
            found.append(text)
    return found


def test_no_page_module_shows_an_english_literal_outside_the_catalogues() -> None:
    """No module shows English text outside t(): a `"Delete " + name` would break Chinese word
    order, and `${n} of ${max} max` stayed English in the Chinese debug page (issue 38)."""
    offenders = [f"{path.name}: {text!r}" for path in sorted(JS.glob("*.js"))
                 for text in english_literals(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_literal_check_catches_the_old_document_picker_badge() -> None:
    old = ('this.count.textContent = this.selected.size\n'
           '  ? `${this.selected.size} of ${MAX_DOCUMENTS} max` : `all (${n})`;\n'
           'say(this.message, `Could not list documents: ${describe(error)}`);\n'
           'h("p", { class: "muted small" }, "no READY document")\n'
           'img.title = `This image could not be loaded: ${error.message || error}`;\n')
    assert english_literals(old) == [
        "${this.selected.size} of ${MAX_DOCUMENTS} max", "all (${n})",
        "Could not list documents: ${describe(error)}", "no READY document",
        "This image could not be loaded: ${error.message || error}"]


class _PageText(HTMLParser):
    """Text and people-facing attributes of a page that data-i18n does not translate."""

    ATTRIBUTES = ("placeholder", "title", "aria-label", "alt")
    VOID = frozenset({"input", "meta", "link", "br", "img", "hr", "source"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.untranslated: list[tuple[str, str | None, str]] = []  # (tag, id, text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        translated = found.get("data-i18n-attr") or ""
        for name in self.ATTRIBUTES:
            if found.get(name) and f"{name}:" not in translated:
                self.untranslated.append((tag, found.get("id"), f"{name}={found[name]}"))
        if tag not in self.VOID:
            self.stack.append((tag, found))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if not self.stack or not re.search(r"[A-Za-z\u4e00-\u9fff]", data):
            return
        tag, found = self.stack[-1]
        if tag not in ("script", "style", "title") and "data-i18n" not in found:
            self.untranslated.append((tag, found.get("id"), data.strip()))


def untranslated_page_text(html: str, written_ids: set[str]) -> list[str]:
    """What a page shows that is neither translated (data-i18n, data-i18n-attr) nor rewritten
    by its module (an element whose id a module writes), nor a name (brand, languages)."""
    parser = _PageText()
    parser.feed(html)
    names = {"ragsift", "English", "中文"}
    return [f"<{tag}> {text}" for tag, element_id, text in parser.untranslated
            if text not in names and not text.startswith("{{")
            and (element_id is None or element_id not in written_ids)]


def _written_ids() -> set[str]:
    ids: set[str] = set()
    for path in JS.glob("*.js"):
        source = path.read_text(encoding="utf-8")
        ids |= set(re.findall(r'(?:\$|getElementById)\(\s*"([\w-]+)"', source))
    return ids


def test_every_visible_text_of_the_pages_is_translated() -> None:
    """Each page's text and its placeholders, titles and labels are in both catalogues (a
    data-i18n key, checked above) or written by the page's module."""
    written = _written_ids()
    problems = [f"{path.name}: {text}" for path in sorted(PAGES.glob("*.html"))
                for text in untranslated_page_text(path.read_text(encoding="utf-8"), written)]
    assert problems == []
    # the check itself: an untranslated heading and title are found
    assert untranslated_page_text('<h2>Plain</h2><p title="Tip" data-i18n="x.y">ok</p>',
                                  written) == ["<h2> Plain", "<p> title=Tip"]


# ---------- in the browser ----------

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """`ragsift serve` (real e5, no chat model, API keys off) with KB "handbook"."""
    require_browser()
    with handbook_server(tmp_path_factory.mktemp("web_i18n"), None) as live:
        yield live


def _chinese_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next Browser starts as a Chinese user's Chromium: UI language and Accept-Language."""
    from selenium import webdriver

    base = webdriver.ChromeOptions

    class ChineseOptions(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.add_argument("--lang=zh-CN")
            self.add_experimental_option("prefs", {"intl.accept_languages": "zh-CN,zh"})

    monkeypatch.setattr(webdriver, "ChromeOptions", ChineseOptions)


@pytest.fixture
def chinese(server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[
        Browser]:
    require_browser()
    _chinese_options(monkeypatch)
    browser = Browser(server.url, tmp_path / "chromium-profile", width=1366, height=768)
    monkeypatch.undo()
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def english(server: LiveServer, tmp_path: Path) -> Iterator[Browser]:
    require_browser()
    browser = Browser(server.url, tmp_path / "chromium-profile", width=390, height=844)
    try:
        yield browser
    finally:
        browser.quit()


def _texts(browser: Browser) -> dict[str, str]:
    found: dict[str, str] = browser.driver.execute_script("""
      const text = (s) => document.querySelector(s)?.textContent.trim() ?? null;
      return {
        lang: document.documentElement.lang,
        title: document.title,
        nav: [...document.querySelectorAll('header.topbar nav a')].map((a) => a.textContent.trim())
          .join('|'),
        switchValue: document.getElementById('lang-switch')?.value ?? null,
        switchName: document.getElementById('lang-switch')?.getAttribute('aria-label') ?? null,
        kbTitle: text('#kb-title'),
        documentsTitle: text('#documents-title'),
        count: text('#documents-count'),
        uploadTitle: text('#upload-title'),
        header: text('#documents-table thead th'),
        status: text('#documents-body tr [data-part=status]'),
        action: text('#documents-body tr [data-action=delete]'),
        actionName: document.querySelector('#documents-body tr [data-action=delete]')
          ?.getAttribute('aria-label') ?? null,
        filter: document.getElementById('documents-filter')?.placeholder ?? null,
        option: text('#kb option'),
        body: document.body.innerText,
      };""")
    return found


def _choose(browser: Browser, lang: str) -> None:
    """Pick a language in the header's switch (a change event, as a user's choice)."""
    from selenium.webdriver.support.ui import Select

    Select(browser.css("#lang-switch")).select_by_value(lang)


def test_a_chinese_browser_gets_chinese_pages_and_english_is_remembered(
    chinese: Browser, server: LiveServer
) -> None:
    kb_id = server.kbs["handbook"]
    chinese.open(f"/web/documents?kb={kb_id}")
    assert chinese.driver.execute_script("return navigator.languages[0]").startswith("zh")
    chinese.wait(lambda _: len(chinese.all("#documents-body tr")) == 3)

    texts = _texts(chinese)
    assert texts["lang"] == "zh-CN" and texts["switchValue"] == "zh-CN"
    assert texts["switchName"] == "语言"
    assert texts["title"] == "ragsift · 文档"
    assert texts["nav"] == "检索调试|对话|文档|常见问题|设置|API"
    assert texts["kbTitle"] == "知识库" and texts["uploadTitle"] == "上传文档"
    assert texts["documentsTitle"] == "handbook 的文档"
    assert texts["count"] == "3 个文档"
    assert texts["header"] == "文件" and texts["status"] == "就绪" and texts["action"] == "删除"
    assert texts["actionName"].startswith("删除 ")
    assert texts["filter"] == "文件名、键或状态"
    assert texts["option"] == "handbook（3/3 就绪，0 条常见问题）"
    assert not SHOWN_KEY.search(texts["body"]), SHOWN_KEY.search(texts["body"])
    assert storage_lang(chinese) is None  # detected, not yet chosen
    chinese.screenshot("i18n-documents-zh-desktop")

    _choose(chinese, "en")

    texts = _texts(chinese)  # re-rendered in place, no reload
    assert texts["lang"] == "en"
    assert texts["nav"] == "Retrieval debug|Chat|Documents|FAQ|Settings|API"
    assert texts["kbTitle"] == "Knowledge base"
    assert texts["documentsTitle"] == "Documents of handbook"
    assert texts["count"] == "3 documents" and texts["status"] == "READY"
    assert texts["action"] == "Delete" and texts["option"] == "handbook (3/3 ready, 0 FAQ)"
    assert texts["title"] == "ragsift · documents"
    assert storage_lang(chinese) == "en"

    chinese.driver.refresh()
    chinese.wait(lambda d: d.find_element("css selector", "body").get_attribute("data-ready"))
    texts = _texts(chinese)
    assert texts["lang"] == "en" and texts["switchValue"] == "en"
    assert texts["documentsTitle"] == "Documents of handbook"

    # the other pages follow the remembered choice, their headers included
    for path, name in (("/web/faq", "FAQ"), ("/web/chat", "Chat"),
                       ("/web/debug", "Retrieval debug"), ("/web/settings", "Settings")):
        chinese.open(f"{path}?kb={kb_id}")
        texts = _texts(chinese)
        assert texts["lang"] == "en" and texts["switchValue"] == "en", path
        assert name in texts["nav"].split("|"), path
    assert chinese.console_errors() == []


def storage_lang(browser: Browser) -> str | None:
    chosen: str | None = browser.storage()["local"].get("ragsift.lang")
    return chosen


def test_an_english_browser_switches_to_chinese_on_the_faq_page_and_keeps_it(
    english: Browser, server: LiveServer
) -> None:
    kb_id = server.kbs["handbook"]
    english.open(f"/web/faq?kb={kb_id}")
    assert english.css("html").get_attribute("lang") == "en"
    assert english.css("#import-title").text == "Import FAQ entries"
    assert english.css("#faq-title").text == "FAQ entries of handbook"

    _choose(english, "zh-CN")

    english.wait(lambda _: english.css("#faq-title").text == "handbook 的常见问题")
    assert english.css("html").get_attribute("lang") == "zh-CN"
    assert english.css("#import-title").text == "导入常见问题"
    assert english.css("#faq-empty").text == "此知识库中还没有常见问题：请导入一个文件。"
    assert english.css("#faq-count").text == "0 条"
    assert english.css("#import-button").text == "导入"
    assert english.css("#faq-search").get_attribute("placeholder") == "问题、答案或来源"
    body = english.css("body").text
    assert not SHOWN_KEY.search(body), SHOWN_KEY.search(body)
    english.screenshot("i18n-faq-zh-mobile")

    english.open(f"/web/documents?kb={kb_id}")  # remembered across pages and loads
    assert english.css("#kb-title").text == "知识库"
    assert english.css("#lang-switch").get_attribute("value") == "zh-CN"
    english.wait(lambda _: len(english.all("#documents-body tr")) == 3)
    english.screenshot("i18n-documents-zh-mobile")
    assert english.console_errors() == []
