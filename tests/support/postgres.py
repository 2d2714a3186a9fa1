"""A throwaway PostgreSQL server for tests: initdb + postgres in a temporary directory.

The server listens on a Unix socket only (listen_addresses = '') in its own temporary
directory, trusts local connections, and is stopped and deleted when the context exits.
It runs in the foreground as a child of the test process (not daemonised by `pg_ctl start`),
with a parent-death signal, so even a killed test run leaves no server behind.

initdb refuses to run as root: a root test process runs initdb and postgres as the
unprivileged `postgres` system user. The tests never create that user; `.ci/run` does.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

# Where to look for initdb/postgres, in order; RAGSIFT_TEST_PG_BIN overrides.
PG_BIN_DIRS = ("/usr/lib/postgresql/15/bin",)
TOOLS = ("initdb", "postgres")
SERVER_USER = "postgres"  # the OS user root runs the server as, and the superuser's name
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0

# Durability is worthless for a server deleted after the run; turning it off makes
# CREATE DATABASE and every commit much faster.
_SERVER_SETTINGS = {
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "100",
    # Not UTC on purpose: timestamptz values come back in the session's zone, and the
    # repository must still hand out UTC.
    "timezone": "'Asia/Shanghai'",
}


class PostgresUnavailable(Exception):
    """PostgreSQL cannot be started here; the message says why (used as a skip reason)."""


def find_bin_dir() -> Path:
    """The directory holding initdb and postgres, or PostgresUnavailable."""
    override = os.environ.get("RAGSIFT_TEST_PG_BIN")
    candidates = [Path(override)] if override else [Path(d) for d in PG_BIN_DIRS]
    if not override and (initdb := shutil.which("initdb")):
        candidates.append(Path(initdb).parent)
    for directory in candidates:
        if all(os.access(directory / tool, os.X_OK) for tool in TOOLS):
            return directory
    looked = ", ".join(str(d) for d in candidates)
    raise PostgresUnavailable(
        f"PostgreSQL server binaries ({', '.join(TOOLS)}) not found in {looked}; "
        "install postgresql-15 or set RAGSIFT_TEST_PG_BIN"
    )


def _server_account() -> pwd.struct_passwd | None:
    """The account to run the server binaries as: None for the current (non-root) user."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root, which initdb refuses, and there is no {SERVER_USER!r} user to "
            f"run it as (create one: useradd --system --no-create-home {SERVER_USER})"
        ) from None


def _die_with_parent() -> None:
    """In the server's process: get SIGINT (fast shutdown) when the test process dies."""
    if sys.platform == "linux":
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGINT)


@dataclass
class PostgresServer:
    """A running server: its socket directory and a way to make empty databases."""

    socket_dir: Path
    user: str = SERVER_USER
    _names: Iterator[int] = field(default_factory=itertools.count)

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of `database` on this server (psycopg 3, Unix socket)."""
        return f"postgresql+psycopg://{self.user}@/{database}?host={self.socket_dir}"

    def connect(self, database: str = "postgres") -> psycopg.Connection[tuple[Any, ...]]:
        """A plain autocommit connection, for administration."""
        return psycopg.connect(
            host=str(self.socket_dir), user=self.user, dbname=database, autocommit=True
        )

    @contextlib.contextmanager
    def fresh_database(self) -> Iterator[str]:
        """A new empty database for one test (its URL), dropped afterwards."""
        database = f"ragsift_test_{next(self._names)}"
        name = sql.Identifier(database)
        with self.connect() as admin:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(name))
        try:
            yield self.url(database)
        finally:
            with self.connect() as admin:
                # FORCE: a test may leave pooled connections open.
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))


def _wait_until_ready(server: PostgresServer, process: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited with {process.returncode}:\n{_tail(log)}")
        try:
            server.connect().close()
            return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"postgres not ready in {START_TIMEOUT_S}s:\n{_tail(log)}"
                ) from exc
            time.sleep(0.05)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Start a private server in a temporary directory; stop and delete it on exit."""
    bin_dir = find_bin_dir()
    account = _server_account()
    # Directly under /tmp: a short socket path (108-byte limit), reachable by the server user.
    root = Path(tempfile.mkdtemp(prefix="ragsift-pg-"))
    as_server: dict[str, Any] = {"cwd": root}
    if account is not None:
        os.chown(root, account.pw_uid, account.pw_gid)
        as_server |= {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    data, log = root / "data", root / "server.log"
    process: subprocess.Popen[str] | None = None
    try:
        initdb = subprocess.run(
            [
                str(bin_dir / "initdb"), "-D", str(data), "-U", SERVER_USER, "--auth=trust",
                "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions",
            ],
            capture_output=True, text=True, check=False, **as_server,
        )
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed ({initdb.returncode}):\n{initdb.stderr}")
        settings = {**_SERVER_SETTINGS, "unix_socket_directories": f"'{root}'"}
        with (data / "postgresql.conf").open("a") as conf:
            conf.write("\n# ragsift tests\n")
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
        with log.open("w") as log_file:
            if account is not None:
                os.chown(log, account.pw_uid, account.pw_gid)
            process = subprocess.Popen(
                [str(bin_dir / "postgres"), "-D", str(data)],
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                text=True, preexec_fn=_die_with_parent, **as_server,
            )
        server = PostgresServer(socket_dir=root)
        _wait_until_ready(server, process, log)
        yield server
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # fast shutdown: disconnect clients, stop
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(root, ignore_errors=True)


def postgres_or_skip() -> Iterator[PostgresServer]:
    """For a fixture: a running server; skipped with the reason where PostgreSQL is absent.

    With RAGSIFT_TEST_POSTGRES=require (set by .ci/run) an absent PostgreSQL fails instead.
    """
    import pytest

    try:
        with running_postgres() as server:
            yield server
    except PostgresUnavailable as exc:
        if os.environ.get("RAGSIFT_TEST_POSTGRES") == "require":
            pytest.fail(f"RAGSIFT_TEST_POSTGRES=require, but: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
