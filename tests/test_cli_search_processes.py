"""`ragsift serve --search-processes 1` as real processes: searches on both processes see the
same data, writes and streams reach the main process through the search process, a killed
search process is started again, and nothing outlives the main process."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from support.serve import free_port, ragsift_command, running

SMALL = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}
HOTELS = b"# Travel\n\n## Hotels\n\nThe hotel limit per night is 150 dollars in most cities.\n"

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return found


def _search_processes(pid: int) -> list[int]:
    """The main process's children that are search processes (not preparation workers)."""
    out = []
    for child in _children(pid):
        try:
            if b"--search-process-of" in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(child)
        except FileNotFoundError:
            continue
    return out


def _fresh(url: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    """One request on a new connection: the kernel picks the process that accepts it."""
    with httpx.Client(base_url=url, timeout=60) as client:
        return client.request(method, path, **kwargs)  # type: ignore[arg-type]


def _wait_for_search_process(url: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        response = _fresh(url, "GET", "/healthz")
        if response.headers.get("x-ragsift-process") == "search":
            return
        time.sleep(0.05)
    raise AssertionError("no search process answered")


def _wait_ready(url: str, document_id: str) -> None:
    deadline = time.monotonic() + 60
    while _fresh(url, "GET", f"/api/documents/{document_id}").json()["status"] != "READY":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _serve(tmp_path: Path) -> tuple[list[str], str]:
    port = free_port()
    command = [*ragsift_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", str(tmp_path / "data"), "--no-auth", "--search-processes", "1"]
    return command, f"http://127.0.0.1:{port}"


def test_both_processes_answer_searches_and_writes_go_through_to_the_main_one(
    tmp_path: Path,
) -> None:
    command, url = _serve(tmp_path)
    log = tmp_path / "server.log"
    with running(command, log, url, {**os.environ, **SMALL}) as server:
        _wait_for_search_process(url)
        kb_id = _fresh(url, "POST", "/api/kbs", json={"name": "handbook"}).json()["id"]
        # uploads on new connections: some are accepted by the search process and forwarded
        documents = []
        for i in range(6):
            upload = _fresh(url, "POST", f"/api/kbs/{kb_id}/documents",
                            files={"files": (f"hotels-{i}.md", HOTELS + f"Copy {i}.\n".encode())})
            assert upload.status_code == 202, upload.text
            documents.append(upload.json()["documents"][0]["id"])
        for document_id in documents:
            _wait_ready(url, document_id)

        served = collections.Counter()
        for _ in range(24):
            response = _fresh(url, "POST", "/api/retrieval/search",
                              json={"kb": "handbook", "query": "hotel limit per night",
                                    "top_k": 10})
            assert response.status_code == 200, response.text
            assert {hit["document_id"] for hit in response.json()} == set(documents)
            served[response.headers.get("x-ragsift-process", "main")] += 1
        assert served["search"] > 0 and served["main"] > 0, served

        deleted = _fresh(url, "DELETE", f"/api/documents/{documents[0]}")
        assert deleted.status_code in (200, 202, 204), deleted.text
        deadline = time.monotonic() + 30
        while _fresh(url, "GET", f"/api/documents/{documents[0]}").status_code != 404:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for _ in range(12):  # gone in both processes' searches
            hits = _fresh(url, "POST", "/api/retrieval/search",
                          json={"kb": "handbook", "query": "hotel limit", "top_k": 10}).json()
            assert documents[0] not in {hit["document_id"] for hit in hits}

        streams = collections.Counter()
        for _ in range(8):  # a chat stream through either process arrives whole
            with httpx.Client(base_url=url, timeout=60) as client, client.stream(
                    "POST", "/api/chat/stream",
                    json={"kb": "handbook", "message": "What is the hotel limit?"}) as reply:
                assert reply.status_code == 200
                text = "".join(reply.iter_text())
            streams["event: done" in text] += 1
        assert streams == {True: 8}

        [search_pid] = _search_processes(server.pid)
        os.kill(search_pid, signal.SIGKILL)
        # connections the kernel queued on its socket before it died are reset. Its socket
        # closes with its last thread, which a zombie leader may still be waiting for: once
        # the keeper has reaped it, new connections go to the main process alone.
        _wait_until(lambda: not Path(f"/proc/{search_pid}").exists(), None, log)
        for _ in range(6):  # the main process answers meanwhile
            assert _fresh(url, "POST", "/api/retrieval/search",
                          json={"kb": "handbook", "query": "hotel"}).status_code == 200
        deadline = time.monotonic() + 90
        while _search_processes(server.pid) in ([], [search_pid]):
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        _wait_for_search_process(url)
        main_pid = server.pid
        [restarted] = _search_processes(main_pid)
    assert server.returncode == 0, log.read_text()
    assert not Path(f"/proc/{restarted}").exists() or _zombie(restarted)
    assert "exited with -9; starting another" in log.read_text()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_search_processes_die_with_a_killed_main_process_and_the_next_start_works(
    tmp_path: Path,
) -> None:
    command, url = _serve(tmp_path)
    log = tmp_path / "server.log"
    with log.open("wb") as output:
        main = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                env={**os.environ, **SMALL})
    try:
        _wait_until(lambda: _healthy(url), main, log)
        _wait_for_search_process(url)
        [search_pid] = _search_processes(main.pid)
        main.kill()  # SIGKILL: no shutdown code runs
        main.wait(timeout=10)
        _wait_until(lambda: _zombie(search_pid), None, log)
    finally:
        if main.poll() is None:
            main.kill()
    again, url = _serve(tmp_path)
    with running(again, tmp_path / "again.log", url, {**os.environ, **SMALL}):
        _wait_for_search_process(url)
        assert _fresh(url, "GET", "/readyz").json()["status"] == "ok"


def _healthy(url: str) -> bool:
    try:
        return _fresh(url, "GET", "/healthz").status_code == 200
    except httpx.TransportError:
        return False


def _wait_until(check: object, process: subprocess.Popen[bytes] | None, log: Path,
                timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert process is None or process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
