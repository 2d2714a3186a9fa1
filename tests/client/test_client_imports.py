"""`import ragsift.client` loads a client, not the server behind it: an SDK user's script and
`ragsift search --server` pay for httpx and the API's models only."""

from __future__ import annotations

import json
import subprocess
import sys

SERVER_SIDE = ("fastapi", "starlette", "uvicorn", "numpy", "sqlalchemy", "tantivy", "rjieba",
               "ragsift.chat.service", "ragsift.ports", "ragsift.retrieval", "ragsift.config")


def test_importing_the_client_imports_nothing_of_the_server() -> None:
    probe = ("import json, sys\nimport ragsift.client\n"
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert {name for name in SERVER_SIDE if name in modules} == set()
