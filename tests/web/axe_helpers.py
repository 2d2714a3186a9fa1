"""axe-core in the browser tests: the vendored tests/web/vendor/axe.min.js injected into the page
under test through Selenium (execute_script runs outside the page's CSP), then `axe.run`.

The product never ships or loads it; see tests/web/vendor/README.md for its origin and licence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from web.web_helpers import Browser

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
DESKTOP = (1366, 768)
PHONE = (390, 844)
BLOCKING = ("serious", "critical")
# WCAG 2.1 A and AA plus axe's best practices (region, landmarks, heading order…)
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]

_RUN = """
const done = arguments[arguments.length - 1];
const options = arguments[0];
window.axe.run(document, options).then(
  (result) => done(result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map((n) => ({ target: n.target.map(String).join(" "), impact: n.impact,
      summary: n.failureSummary, html: n.html.slice(0, 200) })),
  }))),
  (error) => done({ error: String(error) }));
"""


def set_viewport(browser: Browser, size: tuple[int, int]) -> None:
    """The window at `size` and the page's viewport exactly that (Chromium's windows have a
    minimum width, so the viewport is set through the DevTools protocol)."""
    width, height = size
    browser.driver.set_window_size(width, height)
    browser.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    got = browser.driver.execute_script("return [innerWidth, innerHeight]")
    assert got[0] == width, f"viewport {got}, wanted {size}"


def run_axe(browser: Browser, tags: list[str] | None = None) -> list[dict[str, Any]]:
    """The page's axe violations (each {id, impact, help, helpUrl, nodes: [{target, ...}]})."""
    if not browser.driver.execute_script("return Boolean(window.axe)"):
        browser.driver.execute_script(AXE.read_text(encoding="utf-8"))
        assert browser.driver.execute_script("return Boolean(window.axe)"), "axe did not load"
    result = browser.driver.execute_async_script(
        _RUN, {"runOnly": {"type": "tag", "values": tags or TAGS},
               "resultTypes": ["violations"]})
    assert not isinstance(result, dict), result
    violations: list[dict[str, Any]] = result
    return violations


def blocking(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The serious and critical ones."""
    return [v for v in violations if v["impact"] in BLOCKING]


def report(violations: list[dict[str, Any]]) -> str:
    """One line per violation and node: impact, rule, the node's selector, axe's summary."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            summary = " ".join(str(node["summary"] or "").split())
            lines.append(f"{violation['impact']} {violation['id']} at {node['target']}: "
                         f"{violation['help']} ({summary[:160]})")
    return "\n".join(lines)
