"""Run the `ragsift` command as a user would: a real process with its own data directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def ragsift(data_dir: Path, *args: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """`python -m ragsift.cli ARGS` with RAGSIFT_DATA_DIR set (and `env` added); never raises
    on exit codes."""
    env = {**os.environ, "RAGSIFT_DATA_DIR": str(data_dir), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragsift.cli", *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
