"""HTML parsing: h1-h6 heading paths, dropped chrome, lists, tables and Chinese text."""

from __future__ import annotations

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from support import hostile

FAQ = """<!DOCTYPE html>
<html><head><title>IT FAQ 常见问题</title>
<style>body { color: red }</style><script>var secret = "tracking";</script></head>
<body>
<nav><a href="/">Home 首页</a> <a href="/it">IT</a></nav>
<h1>IT 服务台常见问题</h1>
<p>Call extension <b>8000</b> if your question is not listed.</p>
<h2>账号与密码</h2>
<h3>如何重置密码？</h3>
<p>访问自助门户，
   选择“忘记密码”。</p>
<h3>How long must a password be?</h3>
<p>At least <em>12</em> characters.</p>
<h2>VPN</h2>
<h3>Slow VPN?</h3>
<ul><li>Use wired network</li><li><p>Pick the nearest gateway</p>
  <ul><li>上海</li><li>北京</li></ul></li></ul>
<ol start="3"><li>third</li><li>fourth</li></ol>
<table><tr><th>Channel</th><th>Response</th></tr>
<tr><td>Phone 电话</td><td>Immediate</td></tr></table>
<pre>vpn  connect
   --gateway sh</pre>
<!-- an HTML comment -->
</body></html>
"""


def parse(html: str) -> ParsedDocument:
    return parse_document("faq.html", html.encode("utf-8"))


def test_headings_become_nested_heading_paths() -> None:
    paths = [section.heading_path for section in parse(FAQ).sections]
    assert paths == [
        ("IT 服务台常见问题",),
        ("IT 服务台常见问题", "账号与密码", "如何重置密码？"),
        ("IT 服务台常见问题", "账号与密码", "How long must a password be?"),
        ("IT 服务台常见问题", "VPN", "Slow VPN?"),
    ]


def test_script_style_nav_title_and_comments_are_dropped() -> None:
    text = "\n".join(section.text for section in parse(FAQ).sections)
    for unwanted in ("tracking", "color: red", "Home", "IT FAQ 常见问题", "comment"):
        assert unwanted not in text


def test_chinese_text_survives_and_a_source_line_break_between_cjk_vanishes() -> None:
    assert parse(FAQ).sections[1].text == "访问自助门户，选择“忘记密码”。"


def test_inline_markup_keeps_spacing() -> None:
    sections = parse(FAQ).sections
    assert sections[0].text == "Call extension 8000 if your question is not listed."
    assert sections[2].text == "At least 12 characters."


def test_lists_tables_and_pre_render_as_readable_blocks() -> None:
    assert parse(FAQ).sections[3].text == (
        "- Use wired network\n"
        "- Pick the nearest gateway\n"
        "- 上海\n"
        "- 北京\n\n"
        "3. third\n"
        "4. fourth\n\n"
        "Channel | Response\n"
        "Phone 电话 | Immediate\n\n"
        "vpn connect\n"
        "--gateway sh"
    )


def test_paragraphs_and_line_breaks() -> None:
    parsed = parse("<h1>T</h1><div><p>one</p><p>two<br>three</p></div>")
    assert parsed.sections[0].text == "one\n\ntwo\nthree"


def test_fragment_without_html_or_body_tags_is_parsed() -> None:
    parsed = parse("<p>Just a fragment</p>")
    assert [(s.heading_path, s.text) for s in parsed.sections] == [((), "Just a fragment")]


def test_gb18030_encoded_html_is_decoded() -> None:
    html = '<html><head><meta charset="gbk"></head><body><h1>差旅</h1><p>住宿标准</p></body></html>'
    parsed = parse_document("gbk.htm", html.encode("gb18030"))
    assert [(s.heading_path, s.text) for s in parsed.sections] == [(("差旅",), "住宿标准")]


def test_deeply_nested_markup_does_not_hit_the_recursion_limit() -> None:
    html = "<div>" * 3000 + "deep text" + "</div>" * 3000
    assert parse(html).sections[0].text == "deep text"


def test_inline_markup_inside_a_heading_does_not_split_words() -> None:
    parsed = parse("<h2>重置<b>密码</b> in <em>5</em> min</h2><p>body</p>")
    assert parsed.sections[0].heading_path == ("重置密码 in 5 min",)


def test_a_nesting_bomb_is_rejected_by_counting_elements_before_the_tree_is_built() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"HTML has more than 500,000 elements \(RAGSIFT_MAX_HTML_ELEMENTS\)",
    ):
        parse_document("bomb.html", hostile.html_nesting_bomb(1_000_000))


def test_elements_up_to_the_limit_parse_and_one_more_is_rejected() -> None:
    html = "<p>one</p><p>two</p><p>three</p>"
    assert parse_document("a.html", html.encode(), ParseLimits(max_html_elements=3)).sections
    with pytest.raises(DocumentRejected, match=r"more than 2 elements"):
        parse_document("a.html", html.encode(), ParseLimits(max_html_elements=2))


def test_angle_brackets_in_text_are_not_counted_as_elements() -> None:
    html = "<p>" + "a < b, " * 50 + "</p>"  # 101 '<' but one element
    parsed = parse_document("a.html", html.encode(), ParseLimits(max_html_elements=2))
    assert parsed.sections[0].text.startswith("a < b, a < b")


def test_sloppy_unclosed_paragraphs_nest_deeply_and_still_parse() -> None:
    html = "".join(f"<p>paragraph {number}" for number in range(1_000))  # 1,000 deep
    assert parse(html).sections[0].text.endswith("paragraph 999")
