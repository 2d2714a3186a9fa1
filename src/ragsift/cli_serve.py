"""`ragsift serve`: the HTTP API under uvicorn, over one data directory."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from ragsift.cli_common import DataDir, open_container

logger = logging.getLogger(__name__)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8000,
    data_dir: DataDir = None,
) -> None:
    """Serve the REST API (OpenAPI at /docs); uploads are ingested by a background worker."""
    # imported here, so the other commands do not pay for the web stack
    import uvicorn

    from ragsift.api import create_app

    logging.getLogger("ragsift").setLevel(logging.INFO)
    with open_container(data_dir) as container:
        uvicorn.run(create_app(container), host=host, port=port, log_level="info")
