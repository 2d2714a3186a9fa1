"""429 answers are waited out (Retry-After) and sent again, within bounds: against a live server
whose key may send one request every two seconds."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.api_helpers import FIRMWARE
from ragsift.client import AsyncRagsiftClient, RagsiftClient, RateLimitedError
from support.live_server import LiveServer, create_key, serving

RATE_PER_S = 0.5  # with bursts of 1: the next request may go two seconds after the last


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    root = tmp_path_factory.mktemp("limited_server")
    key = create_key(root / "data", "admin", "admin")
    with serving(root / "data", root / "server.log", RAGSIFT_AUTH="true",
                 RAGSIFT_KEY_RATE_PER_S=str(RATE_PER_S), RAGSIFT_KEY_BURST="1") as server:
        yield server, key


def _retries(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "ragsift.client" and "retry" in r.getMessage()]


def test_a_rate_limited_request_waits_for_retry_after_and_then_succeeds(
    limited: tuple[LiveServer, str], caplog: pytest.LogCaptureFixture,
) -> None:
    server, key = limited
    caplog.set_level(logging.WARNING, logger="ragsift.client")
    with RagsiftClient(server.url, api_key=key, retries=3) as client:
        started = time.monotonic()
        client.list_kbs()
        assert client.list_kbs() == []  # refused at first: the burst of one was spent

    assert time.monotonic() - started >= 1 / RATE_PER_S - 0.5
    retries = _retries(caplog)
    assert retries and all("rate_limited" in message for message in retries)


def test_without_retries_the_429_is_raised_with_its_retry_after(
    limited: tuple[LiveServer, str],
) -> None:
    server, key = limited
    with RagsiftClient(server.url, api_key=key) as patient, \
            RagsiftClient(server.url, api_key=key, retries=0) as impatient:
        patient.list_kbs()  # spends the token
        with pytest.raises(RateLimitedError) as raised:
            impatient.list_kbs()

    assert (raised.value.status, raised.value.code) == (429, "rate_limited")
    assert raised.value.retry_after is not None and raised.value.retry_after >= 1


def test_a_retry_after_longer_than_max_retry_wait_is_raised_at_once(
    limited: tuple[LiveServer, str],
) -> None:
    server, key = limited
    with RagsiftClient(server.url, api_key=key) as patient, \
            RagsiftClient(server.url, api_key=key, max_retry_wait_s=0.5) as hasty:
        patient.list_kbs()
        started = time.monotonic()
        with pytest.raises(RateLimitedError):
            hasty.list_kbs()

    assert time.monotonic() - started < 0.5


def test_an_upload_refused_with_429_is_sent_again_and_stored_once(
    limited: tuple[LiveServer, str], tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    server, key = limited
    caplog.set_level(logging.WARNING, logger="ragsift.client")
    on_disk = tmp_path / "firmware.txt"
    on_disk.write_bytes(FIRMWARE)
    progress: list[tuple[int, int]] = []
    with RagsiftClient(server.url, api_key=key) as client:
        kb = client.create_kb("retried-uploads")
        caplog.clear()
        # sent right after create_kb took the token: refused before it was read
        [uploaded] = client.upload_documents(kb.id, [on_disk],
                                             progress=lambda *p: progress.append(p))
        documents = client.list_documents(kb.id)

    assert any("/documents" in message and "rate_limited" in message
               for message in _retries(caplog))
    assert [d.id for d in documents] == [uploaded.id]
    assert not uploaded.duplicate
    # each attempt sent the whole body again, from 0
    assert sum(1 for sent, _ in progress if sent == 0) >= 2


def test_the_async_client_waits_out_429s_too(
    limited: tuple[LiveServer, str], caplog: pytest.LogCaptureFixture,
) -> None:
    server, key = limited
    caplog.set_level(logging.WARNING, logger="ragsift.client")

    async def twice() -> float:
        async with AsyncRagsiftClient(server.url, api_key=key) as client:
            started = time.monotonic()
            await client.list_kbs()
            await client.list_kbs()
            return time.monotonic() - started

    assert asyncio.run(twice()) >= 1 / RATE_PER_S - 0.5
    assert _retries(caplog)
