"""The browser harness: skip or fail without Chromium, and never ask Selenium Manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from web import web_helpers
from web.web_helpers import Browser, browser_missing, require_browser

PACKAGES = {"chromium": "chromium", "chromedriver": "chromium-driver"}
MISSING = [("chromium",), ("chromedriver",), ("chromium", "chromedriver")]


def _only_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, missing: tuple[str, ...]
) -> dict[str, str]:
    """Point the harness at tmp_path, where only the pieces not in `missing` exist.

    The rest are stand-in executables, so the outcome never depends on this machine. The
    reason each missing piece must be given, by name.
    """
    for name, attribute in (("chromium", "CHROMIUM"), ("chromedriver", "CHROMEDRIVER")):
        path = tmp_path / name
        if name not in missing:
            path.write_text("#!/bin/sh\n")
            path.chmod(0o755)
        monkeypatch.setattr(web_helpers, attribute, path)
    return {name: f"{tmp_path / name} is missing (apt-get install {PACKAGES[name]})"
            for name in PACKAGES}


def test_a_missing_browser_skips_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reasons = _only_missing(monkeypatch, tmp_path, ("chromium",))
    monkeypatch.delenv("RAGSIFT_TEST_BROWSER", raising=False)

    with pytest.raises(pytest.skip.Exception) as skipped:
        require_browser()

    assert str(skipped.value) == f"browser tests need Chromium: {reasons['chromium']}"


@pytest.mark.parametrize("missing", MISSING, ids=["+".join(m) for m in MISSING])
def test_a_missing_browser_fails_when_required_naming_each_missing_piece(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, missing: tuple[str, ...]
) -> None:
    reasons = _only_missing(monkeypatch, tmp_path, missing)
    monkeypatch.setenv("RAGSIFT_TEST_BROWSER", "require")

    with pytest.raises(pytest.fail.Exception) as failed:
        require_browser()

    message = str(failed.value)
    assert message.startswith("RAGSIFT_TEST_BROWSER=require but ")
    for name, reason in reasons.items():
        assert (reason in message) == (name in missing), message


def test_nothing_is_missing_when_both_pieces_are_there(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _only_missing(monkeypatch, tmp_path, ())
    assert browser_missing() is None


def test_the_browser_starts_without_selenium_manager(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_browser()
    from selenium.webdriver.common.selenium_manager import SeleniumManager

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Selenium Manager was asked for a driver (it may download one)")

    monkeypatch.setattr(SeleniumManager, "binary_paths", refuse)
    assert browser_missing() is None

    chrome = Browser("http://127.0.0.1:9", tmp_path / "profile")
    try:
        version = chrome.driver.capabilities["browserVersion"]
    finally:
        chrome.quit()
    assert version.split(".")[0].isdigit()
