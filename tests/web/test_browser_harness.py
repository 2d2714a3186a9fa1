"""The browser harness: skip or fail without Chromium, and never ask Selenium Manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from web import web_helpers
from web.web_helpers import Browser, browser_missing, require_browser


def test_a_missing_browser_skips_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(web_helpers, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.delenv("RAGSIFT_TEST_BROWSER", raising=False)

    with pytest.raises(pytest.skip.Exception) as skipped:
        require_browser()

    assert str(skipped.value) == (
        f"browser tests need Chromium: {tmp_path / 'chromium'} is missing "
        "(apt-get install chromium)")


def test_a_missing_browser_fails_when_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(web_helpers, "CHROMEDRIVER", tmp_path / "chromedriver")
    monkeypatch.setenv("RAGSIFT_TEST_BROWSER", "require")

    with pytest.raises(pytest.fail.Exception) as failed:
        require_browser()

    assert "RAGSIFT_TEST_BROWSER=require but" in str(failed.value)
    assert "(apt-get install chromium-driver)" in str(failed.value)


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
