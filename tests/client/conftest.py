"""One live `ragsift serve` (auth on) for the client tests, its keys, and a ready handbook KB."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from api.api_helpers import HOTELS, LEAVE
from client.client_helpers import MAX_FILE_BYTES, Handbook, Served
from ragsift.client import RagsiftClient
from support.live_server import create_key, serving


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("client_server")
    data_dir = root / "data"
    keys = {role: create_key(data_dir, role, role) for role in ("admin", "editor", "reader")}
    with serving(data_dir, root / "server.log", RAGSIFT_AUTH="true",
                 RAGSIFT_MAX_FILE_BYTES=str(MAX_FILE_BYTES)) as server:
        yield Served(server, keys["admin"], keys["editor"], keys["reader"])


@pytest.fixture
def admin(served: Served) -> Iterator[RagsiftClient]:
    with RagsiftClient(served.url, api_key=served.admin_key) as client:
        yield client


@pytest.fixture
def reader(served: Served) -> Iterator[RagsiftClient]:
    with RagsiftClient(served.url, api_key=served.reader_key) as client:
        yield client


@pytest.fixture(scope="session")
def handbook(served: Served) -> Handbook:
    with RagsiftClient(served.url, api_key=served.admin_key) as client:
        kb = client.create_kb("handbook")
        uploaded = client.upload_documents(kb.id, [("hotels.md", HOTELS), ("leave.md", LEAVE)])
        hotels, leave = client.wait_until_ready(uploaded, timeout=120)
        assert (hotels.status, leave.status) == ("READY", "READY"), served.server.log_text()
        return Handbook(client.get_kb(kb.id), hotels, leave)
