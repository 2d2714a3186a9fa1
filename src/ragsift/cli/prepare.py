"""Model files built before work starts: `ingest`, `sync` and `serve` build the ONNX e5 graph
(about a minute, once per cache folder) at start-up, with progress on a terminal and a line
otherwise, so the first search never pays for it. The build itself is atomic (a temporary file
renamed into place: ragsift.adapters.onnx_e5.cache), so an interrupted one leaves nothing."""

from __future__ import annotations

import time
from typing import Protocol

from ragsift.cli.common import err


class Preparable(Protocol):
    def needs_build(self) -> bool: ...

    def prepare(self) -> bool: ...


# the graph: about a minute, once per cache folder; its copy packed for this machine: about
# a second, once per CPU and ONNX Runtime version (onnx_e5/prepacked.py)
MESSAGE = "preparing the e5 model graph in the model cache (once; up to about a minute)"


def prepare_embedder(embedder: Preparable) -> bool:
    """Build what the embedder's first load would build; whether anything was built."""
    if not embedder.needs_build():
        return False
    started = time.perf_counter()
    if err.is_terminal:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn(MESSAGE), TimeElapsedColumn(), console=err,
                      transient=True) as progress:
            progress.add_task(MESSAGE, total=None)
            built = embedder.prepare()
    else:
        err.print(f"{MESSAGE}...")
        built = embedder.prepare()
    err.print(f"e5 model graph ready ({time.perf_counter() - started:.1f} s)")
    return built
