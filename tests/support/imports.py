"""What a fresh interpreter imports: the import-cost tests' one probe."""

from __future__ import annotations

import json
import subprocess
import sys


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (which must not print a last
    line of its own)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))
