"""`ragsift serve` with access control: on by default, off only on loopback, Host checked."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ragsift.cli.serve import is_loopback
from support.live_server import create_key, serving
from support.serve import free_port, ragsift_command


@contextmanager
def _serving(tmp_path: Path, *args: str, **env: str) -> Iterator[tuple[httpx.Client, Path]]:
    with serving(tmp_path / "data", tmp_path / "server.log", *args, **env) as server, \
            httpx.Client(base_url=server.url, timeout=10) as client:
        yield client, server.log


def _keys_create(tmp_path: Path, *args: str) -> str:
    name, role = args[1], args[3]
    return create_key(tmp_path / "data", name, role, *args[4:])


def test_serve_requires_keys_by_default_and_accepts_one_made_with_the_cli(
    tmp_path: Path,
) -> None:
    secret = _keys_create(tmp_path, "--name", "admin", "--role", "admin")
    with _serving(tmp_path, RAGSIFT_AUTH="true") as (client, log):
        assert client.get("/api/kbs").status_code == 401
        ok = client.get("/api/kbs", headers={"Authorization": f"Bearer {secret}"})
        assert ok.status_code == 200, ok.text
        assert "API keys are required" in log.read_text()
        # a DNS-rebinding page reaches the server under its own name: refused
        rebound = client.get("/api/kbs", headers={"Host": "attacker.example",
                                                  "Authorization": f"Bearer {secret}"})
        assert rebound.status_code == 400
        assert client.get("/healthz", headers={"Host": "localhost"}).status_code == 200
        assert client.get("/docs").status_code == 404  # no CDN-loaded Swagger UI by default


def test_no_auth_is_allowed_on_loopback_and_said_at_start_up(tmp_path: Path) -> None:
    with _serving(tmp_path, "--no-auth", RAGSIFT_AUTH="true") as (client, log):
        assert client.get("/api/kbs").status_code == 200
        assert "API keys are OFF" in log.read_text()


def test_serving_a_non_loopback_address_without_keys_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [*ragsift_command(), "serve", "--host", "0.0.0.0", "--port", str(free_port()),
         "--no-auth", "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing to serve 0.0.0.0 without API keys" in done.stderr


def test_loopback_addresses_are_told_apart_from_others() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "example.com", ""]))
