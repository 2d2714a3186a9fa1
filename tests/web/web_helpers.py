"""A real `ragsift serve` process and a headless Debian Chromium driven by Selenium.

Selenium Manager never runs: the driver path is given to `Service`, and the browser binary to the
options, so nothing is downloaded. Without chromium or chromedriver on PATH the
browser tests skip with the reason, unless RAGSIFT_TEST_BROWSER=require (then they fail).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from api.api_helpers import FIRMWARE, HOTELS, LEAVE
from support.serve import free_port, ragsift_command, wait_healthy

# Looked up on PATH, so a PATH without them makes the browser tests skip (or fail when
# required); Debian installs both in /usr/bin.
CHROMIUM = Path(shutil.which("chromium") or "chromium")
CHROMEDRIVER = Path(shutil.which("chromedriver") or "chromedriver")
REPO_ROOT = Path(__file__).resolve().parents[2]
# test-output/ is git-ignored; CI may point RAGSIFT_TEST_ARTIFACTS at its artifact folder
ARTIFACTS = Path(os.environ.get("RAGSIFT_TEST_ARTIFACTS", REPO_ROOT / "test-output"))
SCREENSHOTS = ARTIFACTS / "screenshots"
SETTLED = ("READY", "FAILED")
HANDBOOK = {"hotels.md": HOTELS, "leave.md": LEAVE, "firmware.txt": FIRMWARE}
T = TypeVar("T")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[dev]')"
    # every missing piece is named, so one install fixes the machine
    missing = [
        f"{path} is missing (apt-get install {package})"
        for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver"))
        if not (path.is_file() and os.access(path, os.X_OK))
    ]
    return "; ".join(missing) or None


def require_browser() -> None:
    """Skip (or, with RAGSIFT_TEST_BROWSER=require, fail) when the browser cannot run."""
    reason = browser_missing()
    if reason is None:
        return
    if os.environ.get("RAGSIFT_TEST_BROWSER", "").lower() == "require":
        pytest.fail(f"RAGSIFT_TEST_BROWSER=require but {reason}", pytrace=False)
    pytest.skip(f"browser tests need Chromium: {reason}")


@dataclass
class LiveServer:
    """A running `ragsift serve` and an HTTP client on it (for seeding and checking)."""

    url: str
    client: httpx.Client
    log: Path
    kbs: dict[str, str] = field(default_factory=dict)

    def create_kb(self, name: str) -> str:
        response = self.client.post("/api/kbs", json={"name": name})
        assert response.status_code == 201, response.text
        kb_id: str = response.json()["id"]
        self.kbs[name] = kb_id
        return kb_id

    def ingest(self, kb_id: str, files: dict[str, bytes], timeout_s: float = 120) -> list[str]:
        """Upload files over HTTP and wait until every one is READY."""
        parts = [("files", (name, data, "application/octet-stream"))
                 for name, data in files.items()]
        response = self.client.post(f"/api/kbs/{kb_id}/documents", files=parts)
        assert response.status_code == 202, response.text
        ids = [d["id"] for d in response.json()["documents"]]
        deadline = time.monotonic() + timeout_s
        for document_id in ids:
            while (status := self.document(document_id)["status"]) not in SETTLED:
                assert time.monotonic() < deadline, f"{document_id} still {status}"
                time.sleep(0.1)
            assert status == "READY", self.document(document_id)
        return ids

    def chat(self, kb_id: str, message: str) -> dict[str, Any]:
        """One whole chat turn over POST /api/chat (a new conversation)."""
        response = self.client.post("/api/chat", json={"kb_id": kb_id, "message": message})
        assert response.status_code == 200, response.text
        turn: dict[str, Any] = response.json()
        return turn

    def conversation(self, conversation_id: str) -> dict[str, Any]:
        response = self.client.get(f"/api/conversations/{conversation_id}")
        assert response.status_code == 200, response.text
        conversation: dict[str, Any] = response.json()
        return conversation

    def document(self, document_id: str) -> dict[str, Any]:
        response = self.client.get(f"/api/documents/{document_id}")
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document


@contextlib.contextmanager
def run_server(
    data_dir: Path, log: Path, env: dict[str, str], api_key: str | None = None
) -> Iterator[LiveServer]:
    """`ragsift serve` on a free port until the block ends; SIGINT, then it must exit 0.

    With `api_key`, the LiveServer's client sends it on every request (a server with auth on).
    """
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(data_dir)]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                   env={**os.environ, **env})
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers=headers)
    try:
        wait_healthy(client, process, log, timeout_s=90)
        yield LiveServer(url=f"http://127.0.0.1:{port}", client=client, log=log)
    finally:
        client.close()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextlib.contextmanager
def handbook_server(root: Path, llm_url: str | None,
                    admin_key: str | None = None) -> Iterator[LiveServer]:
    """`ragsift serve` (real e5, small chunks) with KB "handbook"; chat answers come from the
    model server at llm_url, or are extractive without one. With `admin_key` (a key already in
    root/data) the server runs with API keys on and the LiveServer's client sends that key."""
    env = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0",
           "RAGSIFT_REWRITE": "false",  # the model server's chat answers are scripted per test
           "RAGSIFT_AUTH": "true" if admin_key else "false"}
    if llm_url is not None:
        env |= {"RAGSIFT_LLM_BASE_URL": llm_url, "RAGSIFT_LLM_MODEL": "fake-chat"}
    with run_server(root / "data", root / "server.log", env, api_key=admin_key) as server:
        server.ingest(server.create_kb("handbook"), HANDBOOK)
        yield server


class Browser:
    """A headless Chromium on a fresh profile, with waits and named screenshots.

    With `network_log`, the requests the page sends are recorded (see `api_requests`).
    """

    def __init__(self, base_url: str, profile_dir: Path, width: int = 1280, height: int = 900,
                 network_log: bool = False):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for argument in (
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            "--disable-sync", "--disable-extensions", "--disable-default-apps",
            "--metrics-recording-only", "--no-default-browser-check",
            f"--user-data-dir={profile_dir}", f"--window-size={width},{height}",
        ):
            options.add_argument(argument)
        logging_prefs = {"browser": "ALL"} | ({"performance": "ALL"} if network_log else {})
        options.set_capability("goog:loggingPrefs", logging_prefs)
        self.base_url = base_url
        self.driver = webdriver.Chrome(
            service=Service(executable_path=str(CHROMEDRIVER)), options=options
        )
        self.driver.set_page_load_timeout(60)
        self.driver.set_script_timeout(60)

    def open(self, path: str, ready: bool = True) -> None:
        """Load a page and wait until its module script has finished its first load (with
        `ready=False` only until the document is loaded: its first load may wait on a dialog)."""
        self.driver.get(self.base_url + path)
        if ready:
            self.wait(lambda d: d.find_element("css selector", "body").get_attribute("data-ready"))

    def wait(self, condition: Callable[[Any], T], timeout_s: float = 60,
             message: str = "") -> T:
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        # A condition that met a re-rendered element is asked again, not failed.
        return WebDriverWait(
            self.driver, timeout_s, poll_frequency=0.1,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(condition, message)

    def css(self, selector: str) -> Any:
        return self.driver.find_element("css selector", selector)

    def click(self, selector: str, timeout_s: float = 10) -> None:
        """Find and click in one step, again if the element was re-rendered in between.

        Lists such as the conversation list re-render when a fetch completes, so an element
        found a moment earlier can be stale by the time it is clicked.
        """
        def clicked(driver: Any) -> bool:
            driver.find_element("css selector", selector).click()
            return True
        self.wait(clicked, timeout_s, f"{selector} kept going stale")

    def all(self, selector: str) -> list[Any]:
        found: list[Any] = self.driver.find_elements("css selector", selector)
        return found

    def visible(self, selector: str, timeout_s: float = 60) -> Any:
        """Wait until an element matching selector is displayed, and return it."""
        def shown(driver: Any) -> Any:
            for element in driver.find_elements("css selector", selector):
                if element.is_displayed():
                    return element
            return False
        return self.wait(shown, timeout_s, f"{selector} never became visible")

    def press_escape(self) -> None:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()

    def accept_confirm(self) -> str:
        """Accept the page's confirm() dialog; returns its text."""
        from selenium.webdriver.support import expected_conditions

        alert = self.wait(expected_conditions.alert_is_present(), 10, "no confirm dialog")
        text: str = alert.text
        alert.accept()
        return text

    def screenshot(self, name: str, scroll_to: str | None = None) -> Path:
        """Save the viewport (first scrolled to the `scroll_to` element) as NAME.png."""
        if scroll_to is not None:
            self.driver.execute_script(
                "arguments[0].scrollIntoView({block: 'center'})", self.css(scroll_to))
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot {path}"
        return path

    def api_requests(self) -> list[dict[str, Any]]:
        """The /api requests sent since the last call, each {method, url, headers} (header
        names lower-cased); needs `network_log=True`."""
        requests = []
        for entry in self.driver.get_log("performance"):
            event = json.loads(entry["message"])["message"]
            if event.get("method") != "Network.requestWillBeSent":
                continue
            request = event["params"]["request"]
            if "/api/" in request["url"]:
                requests.append({"method": request["method"], "url": request["url"],
                                 "headers": {k.lower(): v for k, v in request["headers"].items()}})
        return requests

    def storage(self) -> dict[str, dict[str, str]]:
        """The page's sessionStorage and localStorage, as {"session": {...}, "local": {...}}."""
        found: dict[str, dict[str, str]] = self.driver.execute_script(
            "const read = (s) => Object.fromEntries(Object.keys(s).map((k) => [k, s.getItem(k)]));"
            "return {session: read(sessionStorage), local: read(localStorage)};")
        return found

    def console_errors(self) -> list[str]:
        """SEVERE entries of the page's console log (script errors, failed loads)."""
        entries = self.driver.get_log("browser")
        return [e["message"] for e in entries if e.get("level") == "SEVERE"]

    def quit(self) -> None:
        self.driver.quit()
