"""`ragsift serve`: the HTTP API under uvicorn, over one data directory.

Shutdown on SIGTERM/SIGINT is bounded by RAGSIFT_SHUTDOWN_TIMEOUT_S from the first signal:
open requests (an SSE stream, say) get what is left of it, then the documents being ingested;
one still running is abandoned as it is (PARSING/INDEXING; the next start resumes it). The
exit code is 0 when the stop completes in time, abandoned documents or not; 1 when something
else still held the process at the deadline.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragsift.cli.common import CliFailure, open_container
from ragsift.cli.options import DataDir
from ragsift.cli.prepare import prepare_embedder
from ragsift.cli.worker import pause_hook_s
from ragsift.shutdown import ShutdownClock, hard_exit

if TYPE_CHECKING:
    import socket

    import uvicorn

    from ragsift.config import Settings

logger = logging.getLogger(__name__)

# uvicorn's own exit code for a server that never started
STARTUP_FAILURE = 3


def _bounded_server(config: uvicorn.Config, clock: ShutdownClock) -> uvicorn.Server:
    import uvicorn

    class BoundedServer(uvicorn.Server):
        """uvicorn whose first stop signal starts the shutdown clock."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            clock.start()
            super().handle_exit(sig, frame)

    return BoundedServer(config)


def _uvicorn_config(app: Any, settings: Settings, graceful_s: float, host: str = "127.0.0.1",
                    port: int = 8000) -> uvicorn.Config:
    """uvicorn's config for `app` (host and port unused where sockets are passed in)."""
    import uvicorn

    return uvicorn.Config(
        app, host=host, port=port, log_level="info",
        # with JSON logs uvicorn keeps the root handler instead of installing its own
        log_config=None if settings.log_format == "json" else uvicorn.config.LOGGING_CONFIG,
        timeout_graceful_shutdown=math.floor(graceful_s),  # whole seconds only
        timeout_keep_alive=settings.keep_alive_s,
    )


def _keep_running_after_uvicorn(clock: ShutdownClock) -> None:
    """Handlers uvicorn restores once it has stopped, and then calls with the signal it got.

    The defaults would end the process there (SIGTERM) or raise KeyboardInterrupt (SIGINT)
    before the container is closed; these only make sure the clock runs.
    """

    def handle(_signum: int, _frame: FrameType | None) -> None:
        clock.start()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or the name localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_exposure(settings: Settings, host: str) -> list[str]:
    """Refuse auth off beyond loopback; say at start-up how the server is protected.

    Returns the Host names to answer: loopback names, the bind address and
    RAGSIFT_ALLOWED_HOSTS (a DNS-rebinding page names its own host, which is refused).
    """
    if not settings.auth and not is_loopback(host):
        raise CliFailure(
            f"refusing to serve {host} without API keys: auth may be off only on a loopback "
            "address (create a key with `ragsift keys create --name NAME --role admin`)", 2)
    if settings.auth:
        logger.info("API keys are required on /api (Authorization: Bearer KEY)")
    else:
        logger.warning("API keys are OFF (--no-auth / RAGSIFT_AUTH=false): anyone who can "
                       "reach %s may use every /api route", host)
    extra = [h.strip() for h in settings.allowed_hosts.split(",") if h.strip()]
    wildcard = host in ("0.0.0.0", "::", "")
    return [*_LOOPBACK_NAMES, *([] if wildcard else [host]), *extra]


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8000,
    data_dir: DataDir = None,
    no_auth: Annotated[bool, typer.Option(
        "--no-auth", help="Serve /api without API keys (loopback addresses only).")] = False,
    search_processes: Annotated[int | None, typer.Option(
        min=0, max=64, help="Processes to start beside this one that answer searches on the "
        "same address [RAGSIFT_SEARCH_PROCESSES, 0]; the embedded index only.")] = None,
    search_process_of: Annotated[Path | None, typer.Option(hidden=True)] = None,
) -> None:
    """Serve the REST API (OpenAPI at /openapi.json); uploads are ingested in the background.

    Every /api route needs an API key (`ragsift keys create`) unless auth is off, which is
    allowed only on a loopback address (--no-auth or RAGSIFT_AUTH=false).
    """
    logging.getLogger("ragsift").setLevel(logging.INFO)
    overrides: dict[str, Any] = {"auth": False} if no_auth else {}
    if search_process_of is not None:
        _serve_searches(host, port, data_dir, overrides, search_process_of)
        return
    if search_processes is not None:
        overrides["search_processes"] = search_processes
    _serve(host, port, data_dir, overrides, no_auth)


def _serve(host: str, port: int, data_dir: Path | None, overrides: dict[str, Any],
           no_auth: bool) -> None:
    """The main process: the data directory's writer (and its search processes' keeper)."""
    # imported here, so the other commands do not pay for the web stack
    from ragsift.api import create_app
    from ragsift.api.deps import AppState

    pause_s = pause_hook_s()
    with open_container(data_dir, **overrides) as container:
        hosts = _check_exposure(container.settings, host)
        prepare_embedder(container.embedder)  # not inside the first search
        state: AppState | None = None

        def still_running() -> str:
            running = state.worker.running() if state is not None else []
            return f"documents still being ingested: {', '.join(running)}" if running else ""

        clock = ShutdownClock(container.settings.shutdown_timeout_s, exit_code=1,
                              describe=still_running)
        app = create_app(container, shutdown_budget_s=clock.remaining,
                         pause_after_parse_s=pause_s, allowed_hosts=hosts)
        state = app.state.ragsift
        # the clock's remaining() starts with the signal, as uvicorn's graceful timeout does
        config = _uvicorn_config(app, container.settings, clock.remaining(), host, port)
        _keep_running_after_uvicorn(clock)
        server = _bounded_server(config, clock)
        with _search_processes(container.settings, host, port, no_auth, config,
                               clock.remaining) as sockets:
            server.run(sockets=sockets)
        if not server.started:
            raise CliFailure("the server did not start; see the log above", STARTUP_FAILURE)
        assert state is not None
        # Again, for a second signal: uvicorn then skips the app's shutdown altogether.
        abandoned = state.worker.shutdown(clock.remaining())
        if abandoned:
            # Their threads still use the stores: closing them underneath could fail those
            # documents for a reason that is not theirs. Left as they are, the next start
            # resumes them.
            logger.warning("exiting without closing the data directory: %d document(s) "
                           "abandoned mid-ingestion", len(abandoned))
            hard_exit(0)


@contextlib.contextmanager
def _search_processes(settings: Settings, host: str, port: int, no_auth: bool,
                      config: uvicorn.Config, budget_s: Callable[[], float],
                      ) -> Iterator[list[socket.socket] | None]:
    """With RAGSIFT_SEARCH_PROCESSES: this process's sockets (the address, shared by port
    reuse, and the unix socket its search processes forward to), the processes running
    meanwhile; else None (uvicorn binds the address itself)."""
    count = settings.search_processes
    if count == 0:
        yield None
        return
    if settings.index_uri:
        raise CliFailure("--search-processes needs the embedded index (RAGSIFT_INDEX_URI is "
                         "set); run more `ragsift serve` processes against the Milvus server "
                         "instead", 2)
    from ragsift.api.forward import ForwardedClient
    from ragsift.cli.search_processes import (
        SearchProcesses,
        listening_socket,
        main_socket_path,
        search_process_command,
        unix_socket,
    )

    path = main_socket_path(settings.data_dir)
    try:
        public = listening_socket(host, port)
    except OSError as exc:
        raise CliFailure(f"cannot listen on {host}:{port}: {exc}", STARTUP_FAILURE) from exc
    bound_port = public.getsockname()[1]
    try:
        private = unix_socket(path)
    except OSError as exc:
        public.close()
        raise CliFailure(f"cannot listen on {path}: {exc}", STARTUP_FAILURE) from exc
    config.app = ForwardedClient(config.app)  # type: ignore[arg-type]
    processes = SearchProcesses(
        search_process_command(host, bound_port, settings.data_dir, path, no_auth), count)
    processes.start()
    try:
        yield [public, private]
    finally:
        processes.stop(max(1.0, budget_s()))
        public.close()
        private.close()
        path.unlink(missing_ok=True)


def _serve_searches(host: str, port: int, data_dir: Path | None,
                    overrides: dict[str, Any], main_socket: Path) -> None:
    """A search process of `ragsift serve`: searches here, the rest to the main process."""
    import os

    import uvicorn

    from ragsift.api import create_app
    from ragsift.api.forward import SearchFront
    from ragsift.cli.search_processes import listening_socket
    from ragsift.processes import die_with_parent

    die_with_parent(os.getppid())  # however the main process ends, this one does too
    with open_container(data_dir, follow=True, **overrides) as container:
        hosts = _check_exposure(container.settings, host)
        app = create_app(container, recover=False, ingest=False, allowed_hosts=hosts)
        front = SearchFront(app, main_socket, container.settings.http_timeout_s)
        config = _uvicorn_config(front, container.settings,
                                 container.settings.shutdown_timeout_s)
        server = uvicorn.Server(config)
        sock = listening_socket(host, port)
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
        if not server.started:
            raise CliFailure("the search process did not start; see the log above",
                             STARTUP_FAILURE)
